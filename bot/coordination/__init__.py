"""What several gpubot replicas share through the Kubernetes API, below any one feature.

    kube_state.py  the connection to the release namespace, the API server's clock (``Date``),
                   compare-and-swap errors; used by the remediation state (``bot.remediation.kube_*``),
                   the watch's memory (``bot.proactive.kube_store``) and leader election (``bot.leader``)

It knows no Slack, no actions and no diagnosis; it only reads and writes gpubot's own objects.
"""
