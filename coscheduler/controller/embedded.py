"""Kopf embedded in the one process: started beside the scheduling loop, never under it.

:func:`run` is ``kopf.operator()`` taken apart, for three things our process
needs of it:

- *Standalone*: no peering (``KopfPeering`` is not leader election, and Kopf
  would turn it on by itself were a ``default`` peering object found). Our
  Lease decides who writes; the handlers wait for it (``writing``).
- *Our signals stay ours*: in the main thread ``kopf.spawn_tasks`` replaces
  the SIGINT and SIGTERM handlers; they are put back (``on_signal``) before
  Kopf runs, so a signal stops the whole process, Kopf with it.
- *Our tasks survive Kopf*: when Kopf ends, ``kopf.run_tasks`` cancels every
  task created since it started unless ``ignored`` holds it; :class:`NotKopfs`
  holds every task whose coroutine is not Kopf's own (the scheduling loop,
  the Bindings in flight, the writers), so only Kopf's tasks, and the
  handlers running in them, end with it.

Kopf never kills the process (``ultimate_exiting_timeout``): it ends as our
signals and timeouts say. Kopf posts no Events (``posting.enabled``): a
standby must write nothing, and the controller's events go through our
reporter. Its logs go through the standard library's loggers, which
:mod:`coscheduler.runtime.logging` renders as our JSON lines.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Callable, Collection, Iterator
from typing import Any

import kopf

__all__ = ["NotKopfs", "run", "settings", "webhook_server"]

_KOPF = "kopf."


def _is_kopfs(task: asyncio.Task[Any]) -> bool:
    coroutine = task.get_coro()
    module = getattr(getattr(coroutine, "cr_frame", None), "f_globals", {}).get("__name__", "")
    return isinstance(module, str) and (module == "kopf" or module.startswith(_KOPF))


class NotKopfs(Collection["asyncio.Task[Any]"]):
    """Every task of the loop but Kopf's own, looked at when asked (a live view)."""

    def __contains__(self, task: object) -> bool:
        return isinstance(task, asyncio.Task) and not _is_kopfs(task)

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        return iter([task for task in asyncio.all_tasks() if task in self])

    def __len__(self) -> int:
        return sum(1 for _ in self)


def settings(webhooks: kopf.WebhookServer | None = None) -> kopf.OperatorSettings:
    """Kopf's settings in our process (see the module docstring). The webhook
    configurations are the chart's (a ``service:`` reference, which Kopf does not
    write), so Kopf manages none."""
    chosen = kopf.OperatorSettings()
    chosen.posting.enabled = False
    # Kopf's API discovery at its start, no watch of CRDs and namespaces (which the
    # ServiceAccount may not list): as the scheduler's own discovery, a CRD installed
    # later is read after a restart (README, "Installing it in a cluster").
    chosen.scanning.disabled = True
    # A Queue's follower returns at each status it writes: "succeeded" lines would be one per write.
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    chosen.admission.server = webhooks
    chosen.admission.managed = None
    # Kopf's last resort for its own CLI: once its task is cancelled, SIGKILL the thread
    # that ran it (here the process's main thread) 10 minutes later, whether or not the
    # process has gone on. Our process exits on its own timeouts; a pytest session whose
    # event loop once ran Kopf was killed by it at the next async test.
    chosen.process.ultimate_exiting_timeout = None
    return chosen


def webhook_server(address: str, port: int, cert_dir: str) -> kopf.WebhookServer:
    """HTTPS on ``address:port`` with the certificate the chart mounts (read again
    when it is rotated)."""
    return kopf.WebhookServer(
        addr=address,
        port=port,
        certfile=os.path.join(cert_dir, "tls.crt"),
        pkeyfile=os.path.join(cert_dir, "tls.key"),
    )


async def run(
    registry: kopf.OperatorRegistry,
    *,
    webhooks: kopf.WebhookServer | None = None,
    namespaces: Collection[str] = (),
    on_signal: Callable[[], object] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Run Kopf with ``registry`` (its login handler included) until ``stop`` or
    cancelled; over ``namespaces`` only when the scheduler reads only those."""
    tasks = await kopf.spawn_tasks(
        registry=registry,
        settings=settings(webhooks),
        standalone=True,
        clusterwide=not namespaces,
        namespaces=namespaces,
        stop_flag=stop,
    )
    if on_signal is not None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, on_signal)
    await kopf.run_tasks(tasks, ignored=NotKopfs())
