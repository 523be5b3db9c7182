"""Reading what users give: files, frames, records → Arrow record batches, nothing lost quietly.

One adapter per input kind, each building its splits (``source.SplitSource``) in one step;
``dataaudit.corpus.load_corpus`` only picks the adapter, peeks the schemas and chooses roles.

* files: ``files`` (format by name → ``FORMATS``), one module per format (``jsonl``,
  ``delimited``, ``parquet``, ``ipc``, ``text``); ``paths`` turns paths, globs, folders, URLs
  (``location``) and stdin into splits
* Hugging Face: ``hf`` (Dataset, IterableDataset, DatasetDict), ``hub`` (``ORG/NAME``, Hub
  reachability and offline mode)
* in memory: ``frames`` (Arrow, polars, pandas, dicts of columns), ``records`` (lists of dicts)
* around them: ``probes`` (input types, without importing optional libraries), ``arrow``
  (plain types), ``schema`` (the peek), ``roles``, ``partition`` (``split="column"``),
  ``shape`` (the stream's one shape), ``notes`` (what INPUT001 reports)
"""
