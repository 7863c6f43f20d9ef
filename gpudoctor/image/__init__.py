"""The image reader: a container image reference turned into one ImageView (gpudoctor/image/view.py),
without pulling, extracting or running anything. `read_image` is in reader.py."""

from gpudoctor.image.reader import read_image
from gpudoctor.image.view import FILES, ImageError, ImageView

__all__ = ["FILES", "ImageError", "ImageView", "read_image"]
