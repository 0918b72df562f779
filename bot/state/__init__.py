"""gpubot's state: what it remembers across restarts and shares between replicas.

    contracts.py        the Protocols every store keeps, whatever the backend (and Leader, NodeGuard)
    records.py          the records they keep: PendingAction, AuditEntry, OpenProblem, NodeClaim…
    timestamps.py       the one time codec (fixed-width UTC text) of every backend
    ids.py              unguessable pending-action ids
    opening.py          ``open_state(settings)``: the one place that reads ``settings.state``

    sqlite.py           the state file: one connection policy (WAL, FULL), the migration list
    sqlite_actions.py   PendingStore on the file
    sqlite_audit.py     AuditLog on the file (append-only by trigger)
    sqlite_requests.py  SeenRequests on the file
    sqlite_watch.py     ProblemStore and AlertGroups on the file

    kube.py             the release namespace on the API: the server's clock, compare-and-swap errors
    kube_actions.py     PendingStore as GpuRemediation objects
    kube_audit.py       AuditLog as GpuAuditRecord objects
    kube_keys.py        SeenRequests as GpuKey objects
    kube_watch.py       ProblemStore and AlertGroups as GpuWatchRecord objects
    kube_locks.py       the per-node Leases: the store's node lock and every actor's NodeGuard
    leadership.py       Leader: a Lease (several replicas) or SoleLeader (one)

Nothing here knows Slack, diagnoses or actions: every feature imports this package, never the
reverse (``tests/unit/test_layers.py``). ``tests/state/test_store_contracts.py`` runs every
contract against both backends.
"""
