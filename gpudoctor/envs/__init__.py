"""Every Python environment on the machine (issue 27): where each is, what found it, its GPU frameworks."""
