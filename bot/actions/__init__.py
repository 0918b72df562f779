"""The only code that changes anything in a cluster or on a node.

Every action runs only after a confirmation (``bot.confirm``) that checked approver, expiry,
single use and the precondition.
"""
