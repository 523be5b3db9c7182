"""Reading what users give: files, frames, records → Arrow record batches, nothing lost quietly."""
