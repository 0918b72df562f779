"""Ways of reading a report that the terminal and Slack share: findings grouped by cause, each
card's state, the fleet picture.

A view imports the report (plain data) and the engine's wording of unread facts; neither imports
a view, so the report stays data and the engine stays free of presentation.
"""
