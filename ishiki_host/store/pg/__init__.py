"""The store on PostgreSQL, for several hosts on one database (issue 25; ``docs/scale-out.md`` when it is wired in).

It needs the ``postgresql`` extra (psycopg 3 and its pool); nothing of the one-machine host imports it. Every
part takes a psycopg ``AsyncConnectionPool`` whose connections are in autocommit mode
(``kwargs={"autocommit": True}``): each write is one statement, its own transaction, unless a part opens one.

- ``schema``: the fleet's tables, versioned; every part's ``setup`` brings the database to the current version
  and a newer one is refused with both versions named (``migrate``).
- ``leases``: who serves a name (a runtime key, a channel account) across the hosts: lease rows with expiry on
  the database's clock and a fencing token that every write under the lease checks (``LeaseBook``).
- ``keeper``: a host's leases renewed in the background, and let go the moment they may be over (``LeaseKeeper``).
- ``facts``: a runtime's fact log as rows, written only under its lease, durable as the fsync policy says
  (``PgFactLog``).
- ``inbox``: an event put on any host reaches the host that serves its runtime, by NOTIFY or the poll
  (``Inbox``).
- ``beats``: heartbeats claimed by one host of the fleet (``FOR UPDATE SKIP LOCKED``), once per slot, under a
  claim with a fencing token on the database's clock that passes on when its host dies mid-run (``PgBeats``).
"""
