"""Code the node agent runs in its own container (the gpubot image), exec'd by the bot.

Read-only, like every probe: it opens host files through the chart's read-only mounts and runs
nothing but the host's nvidia-smi with a fixed argv. ``bot.probes.agent_reads`` holds the exact
commands the bot sends; nothing here reads the command line beyond picking one of them.
"""
