-- A state file as gpubot wrote it before bot/state existed (schema version 3; main at 05e4604): pending
-- actions (one running, with progress), audit entries, a seen Slack request and the watch's tables.
-- Dumped with sqlite3's iterdump; the test sets PRAGMA user_version = 3, which a dump does not keep.
BEGIN TRANSACTION;
CREATE TABLE audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        ts TEXT NOT NULL,
        event TEXT NOT NULL,
        action_id TEXT NOT NULL DEFAULT '',
        action TEXT NOT NULL DEFAULT '',
        actor TEXT NOT NULL DEFAULT '',
        cluster TEXT NOT NULL DEFAULT '',
        target TEXT NOT NULL DEFAULT '',
        detail TEXT NOT NULL DEFAULT '{}',
        outcome TEXT NOT NULL DEFAULT ''
    );
INSERT INTO "audit" VALUES(1,'2026-11-30T10:00:00.000000Z','offer','AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA','kubelet.restart','U0R','','node/gpu-1','{"reason": "zombie"}','offered');
INSERT INTO "audit" VALUES(2,'2026-11-30T10:00:00.000000Z','approve','BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB','','U0A','','','{}','approved');
CREATE TABLE pending_actions (
        id TEXT PRIMARY KEY,
        action TEXT NOT NULL,
        params TEXT NOT NULL,
        cluster TEXT NOT NULL,
        requested_by TEXT NOT NULL,
        channel TEXT NOT NULL DEFAULT '',
        message_ts TEXT,
        thread_ts TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('expired', 'failed', 'interrupted', 'pending', 'refused', 'running', 'succeeded')),
        approved_by TEXT,
        finished_at TEXT,
        result_summary TEXT,
        finding_code TEXT
    , owner TEXT, heartbeat_at TEXT, progress TEXT NOT NULL DEFAULT '{}', lock_key TEXT NOT NULL DEFAULT '', message_blocks TEXT);
INSERT INTO "pending_actions" VALUES('AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA','kubelet.restart','{"node": "gpu-1"}','prod','U0R','C0CHAN',NULL,NULL,'2026-11-30T10:00:00.000000Z','2026-11-30T10:15:00.000000Z','pending',NULL,NULL,NULL,'KUBELET_CHECKPOINT_ZOMBIE',NULL,NULL,'{}','',NULL);
INSERT INTO "pending_actions" VALUES('BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB','checkpoint.clear','{"node": "gpu-2"}','prod','U0R','',NULL,NULL,'2026-11-30T10:00:00.000000Z','2026-11-30T10:15:00.000000Z','running','U0A',NULL,NULL,NULL,'old:1:aa','2026-11-30T10:00:00.000000Z','{"cordoned": true, "step": "cordon"}','prod/node/gpu-2','[{"type": "section"}]');
CREATE TABLE seen_requests (key TEXT PRIMARY KEY, seen_at TEXT NOT NULL);
INSERT INTO "seen_requests" VALUES('command:trigger_id:1','2026-11-30T10:00:00.000000Z');
CREATE TABLE watch_alert_groups (
                    group_key TEXT NOT NULL,
                    channel TEXT NOT NULL,
                    message_ts TEXT NOT NULL,
                    digest TEXT NOT NULL,
                    PRIMARY KEY (group_key, channel)
                );
INSERT INTO "watch_alert_groups" VALUES('{}:{alertname="XidError"}','C0WATCH','2.1','d1');
CREATE TABLE watch_problems (
        fingerprint TEXT NOT NULL,
        channel TEXT NOT NULL,
        cluster TEXT NOT NULL,
        code TEXT NOT NULL,
        subject TEXT NOT NULL,
        severity TEXT NOT NULL,
        title TEXT NOT NULL,
        evidence TEXT NOT NULL,
        digest TEXT NOT NULL,
        message_ts TEXT NOT NULL,
        opened_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        resolved_at TEXT,
        state TEXT NOT NULL CHECK (state IN ('open', 'resolved'))
    );
INSERT INTO "watch_problems" VALUES('gpu-lost/node-1','C0WATCH','prod','GPU_LOST','node/node-1','critical','GPU lost on node-1','["nvidia-smi: GPU has fallen off the bus"]','dbe972c1a77b4e52','1.1','2026-11-30T10:00:00.000000Z','2026-11-30T10:00:00.000000Z',NULL,'open');
CREATE TABLE watch_snoozes (
        fingerprint TEXT NOT NULL,
        channel TEXT NOT NULL,
        until TEXT,
        snoozed_by TEXT NOT NULL,
        snoozed_at TEXT NOT NULL,
        PRIMARY KEY (fingerprint, channel)
    );
INSERT INTO "watch_snoozes" VALUES('gpu-lost/node-2','C0WATCH',NULL,'U1','2026-11-30T10:00:00.000000Z');
CREATE TABLE watch_summaries (
        channel TEXT PRIMARY KEY,
        message_ts TEXT NOT NULL,
        window_start TEXT NOT NULL,
        digest TEXT NOT NULL
    );
INSERT INTO "watch_summaries" VALUES('C0WATCH','9.1','2026-11-30T10:00:00.000000Z','abc');
CREATE INDEX pending_actions_state ON pending_actions (state, expires_at);
CREATE INDEX audit_ts ON audit (ts);
CREATE INDEX audit_action_id ON audit (action_id);
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
        BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
        BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE UNIQUE INDEX one_running_action_per_node ON pending_actions (lock_key)
        WHERE state = 'running' AND lock_key != '';
CREATE INDEX seen_requests_at ON seen_requests (seen_at);
CREATE UNIQUE INDEX watch_problems_open
        ON watch_problems (fingerprint, channel) WHERE state = 'open';
CREATE INDEX watch_problems_by_channel ON watch_problems (cluster, channel, state);
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('audit',2);
COMMIT;
