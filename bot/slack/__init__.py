"""The Slack view of gpubot: the ``/gpu`` command, Block Kit answers, and the two transports.

``app.create_app`` builds the Bolt app around a diagnosis service; ``transport.SlackServer``
connects it to Slack (Socket Mode or HTTP) and serves health and metrics; ``blocks`` renders a
report within Slack's limits. ``remediation.SlackRemediation`` shows the remediation loop (offer
buttons, a click's progress in place, expiry) on top of ``bot.remediation``; ``offer_messages``
words it and ``offer_editor`` edits one button at a time. Nothing in this package diagnoses or
changes a cluster, or imports ``bot.actions``.
"""
