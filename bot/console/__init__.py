"""The command line's presentation: output formats, the progress line, colour and width,
completion scripts, the text rendering of a report and where ``--scenario`` finds its file.

Only the CLI's entry points (``bot.cli``, ``bot.demo``) import it; the diagnosis never does.
"""
