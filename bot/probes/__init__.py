"""READ-ONLY fact gathering: Kubernetes API reads, SSH reads on nodes, exec reads in containers.

Nothing in this package may change a cluster or a node. Kubernetes access here uses only
get/list/watch (and exec for the fixed read commands); SSH access runs only the read
allow-list in ``bot.probes.ssh``.
"""
