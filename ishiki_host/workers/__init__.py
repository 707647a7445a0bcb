"""``ishiki run --workers N``: one supervisor process, N worker processes, one host.

The supervisor (``supervisor``) keeps what must be one: the channels, the HTTP ingress, the host plugins, the
config watcher, the heartbeat scheduler, the data directory's lock. It routes each event to its runtime key as
one process would, then hands it to the worker that owns the key (``owners``: a stable hash, so one turn at a
time per runtime holds and each fact log has one writer) and returns to the channel once that worker made it
durable (``placement``). Each worker (``worker``) is a ``Host`` in the worker role: the runtimes, their models
(a share of each provider's ``max_concurrency``), the memory database (SQLite in WAL mode, shared), the
extensions; what its runtimes send goes back to the supervisor's connections (``outlets``, served by
``serving``).

They talk over a Unix socket the supervisor binds (``pool``): length-prefixed JSON frames (``wire``) carrying
requests and answers both ways (``peer``) of the public event and result types (``codec``). A worker that dies
is restarted with back-off; its runtimes respawn from their fact logs on the next input, and an event it had
not answered for is refused to the channel as "not yet", which sends it again (a repeat is recognised), so
nothing is lost and nothing is answered twice.
"""
