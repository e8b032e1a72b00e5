"""The I/O around the core: watches, bindings, events, the Lease, metrics.

The runtime turns API-server traffic into the plain data the core consumes and
carries out the core's decisions. It does not decide anything itself: every
choice of which pod goes where, and when to retry, comes from ``core``.
"""
