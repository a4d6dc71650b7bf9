"""The oversight node's service and topic names, shared by the node and its clients (the planner,
goal elicitation, the web operator node, the operator CLI and panels), so they cannot drift apart."""
from task_learning_interfaces.msg import PendingConfirmations

CONFIRM_SERVICE = "oversight/confirm"
ANSWER_SERVICE = "oversight/answer"
LIST_SERVICE = "oversight/list_pending"
CHECK_SERVICE = "oversight/check_confirmation"
WITHDRAW_SERVICE = "oversight/withdraw"
PENDING_TOPIC = "oversight/pending"
PendingMsg = PendingConfirmations
