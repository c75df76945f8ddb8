"""Real-to-sim reconstruction: an RGB-D capture, a video or images to a scene folder."""

from metasim.recon.pipeline import ReconOptions, reconstruct

__all__ = ["ReconOptions", "reconstruct"]
