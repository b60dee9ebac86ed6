"""Subscriptions (SPEC §5), by role: subscribing.py writes them (subscribe as an upsert,
unsubscribe, expiry), evaluation.py finds the ones whose result changed, pushing.py pushes a
result (the notification, the PUSH job, what was pushed). Push management's trigger is
subscriptions/push_jobs.py.

The push path, from a change to the subscriber (docs/subscriptions.md, "When a push happens"
and "Delivery"):

1. Database triggers write every change that may alter results into the change feed
   (orchestration/snapshot/changes.py); `subscriptions.process_changes` runs every 2 s, and
   the store's services nudge it after their commit (store/services/nudge.py).
2. `changes_process()` (evaluation.py) flags the subscriptions of the consumers concerned
   (an `EvaluationFlag` row each, services/flagging.py) and moves their `FeedCursor`, in
   one transaction.
3. `subscriptions_evaluate_flagged()` evaluates them in batches (`subscriptions_evaluate`) and,
   for each changed result, writes the PUSH job, the notification (`notifications.outbox`
   `deliveries_create`) and the new result, in bulk.
4. After that commit the notifications are handed over (`notifications/handover.py`) to the
   task `notifications.deliver_batch` (`notifications/services.py` `deliveries_send`), which
   claims, sends and records them.
5. The sweeper (`notifications/sweeping.py`) hands over what is due and not taken.
"""
