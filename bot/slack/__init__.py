"""The Slack view of gpubot: the ``/gpu`` command, Block Kit answers, and the two transports.

``app.create_app`` builds the Bolt app around a diagnosis service; ``transport.SlackServer``
connects it to Slack (Socket Mode or HTTP) and serves health and metrics; ``blocks`` renders a
report within Slack's limits. Nothing in this package diagnoses or changes a cluster.
"""
