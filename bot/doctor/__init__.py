"""``gpubot doctor``: is this installation able to do its job? One line per check, a fix per failure.

``run.run_doctor`` runs the checks against a configured cluster (or a simulator): the API
permissions gpubot's code needs (``needs``, asked with SelfSubjectAccessReviews by ``access``),
the state CRDs, the node agents and one node read through them (``cluster``), the Slack tokens and
their scopes (``slack``), the Alertmanager token. ``result`` holds the answer and its exit status;
``render`` prints it. Doctor reads and asks; it never changes anything.
"""
