"""One handler per kind read from the API server (one module per kind, or per family).

Each handler has ``replace``/``upsert``/``remove`` (:mod:`.base`), feeds the
core through the :class:`~coscheduler.core.scheduler.Scheduler`'s public
methods, and keeps what the runtime needs of its kind. The table of every
kind read, and the set of handlers over one scheduler, are in
:mod:`.registry`; :mod:`coscheduler.runtime.ingest` runs the table.
"""
