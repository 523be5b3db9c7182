"""The report: the machine-readable contract between an audit and a training pipeline."""

from .model import SCHEMA_VERSION, Report

__all__ = ["SCHEMA_VERSION", "Report"]
