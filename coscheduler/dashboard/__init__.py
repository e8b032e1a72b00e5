"""The read-only dashboard: queues, the line and the room, live in a browser.

:mod:`~coscheduler.dashboard.model` reads the scheduler's own state into the
page's data; :mod:`~coscheduler.dashboard.server` serves the page and streams
that data (aiohttp's server, imported only when the dashboard is on).
"""
