"""The report: the machine-readable contract between an audit and a training pipeline."""

from .model import Report
from .schema import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "Report"]
