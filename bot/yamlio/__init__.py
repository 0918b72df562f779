"""YAML read with the line of every key and item, so validation can say ``file:line``.

Named ``yamlio``, not ``yaml``, so that it never shadows PyYAML. ``marks`` is the public half;
``model`` holds its values and errors (no PyYAML), ``convert`` the PyYAML composing.
"""
