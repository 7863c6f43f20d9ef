"""NCCL's transports, predicted and observed: which path NCCL takes between each pair of GPUs in a node
(NVLink, P2P over PCIe, SHM through the CPU) and between nodes (IB/RoCE with or without GPUDirect RDMA,
sockets), following NCCL's own selection logic; what an NCCL_DEBUG=INFO log says it took; and where the
two disagree (issue 26)."""
