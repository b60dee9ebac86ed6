"""Subscriptions (SPEC §5), by role: subscribing.py writes them (subscribe as an upsert,
unsubscribe, expiry), evaluation.py finds the ones whose result changed, pushing.py pushes a
result (the notification, the PUSH job, what was pushed). Push management's trigger is
subscriptions/push_jobs.py.

The push path, from a change to the subscriber, step by step:

1. A write that may alter results (rules, instances, interfaces, reservations, polled
   ServiceRegistry instances) writes rows into the change feed: database triggers, in the
   same transaction (orchestration/snapshot/changes.py). Beat runs the task
   `subscriptions.process_changes` every 2 s, and without a broker the in-process scheduler
   (`config/scheduler.py`) does; the store's services also nudge it after their commit
   (store/services/nudge.py), a moment later so that a burst is handled once.
2. `changes_process()` (evaluation.py) reads the feed from the subscriptions' cursor
   (`FeedCursor`) and, in one transaction, flags the subscriptions of the consumers concerned
   (`needs_evaluation`) and moves the cursor past what it read.
3. `subscriptions_evaluate_flagged()` evaluates the flagged subscriptions 500 per transaction
   (`subscriptions_evaluate`, also the admin's "push now", forced): locks them (skipping
   those another round holds), previews each orchestration from one view of the pull
   snapshot, and for each result that differs from the last one pushed writes, in bulk, the
   PUSH job, the notification (`notifications.outbox` `deliveries_create`, which supersedes
   the subscription's older pending one) and the new result. A subscription whose committed
   orchestration would differ from its preview (reservations, tokens) is pushed from that
   run (pushing.py `subscription_push_queue`), in a savepoint of the same transaction.
4. After that commit the notifications are handed over (`notifications/handover.py`): to a
   `notifications.deliver_batch` task on the queue of their transport, MQTT ones 100 a task,
   HTTP ones one a task (without a broker: the process's pool of the transport).
5. The task (`notifications/services.py` `deliveries_send`) claims its rows (PENDING →
   SENDING, fenced by the claim time; an HTTP one only when its destination admits it),
   leaves out those with a newer notification or an older one still in flight, publishes
   MQTT ones together on the process's broker connection and posts HTTP ones one by one
   while a heartbeat keeps the claims alive, and records each outcome: DELIVERED, FAILED
   for good, or PENDING again with backoff (those of a task are retried together, by one
   task).
6. The sweeper (`notifications.sweep`, periodic, `notifications/sweeping.py`) hands over what
   is due and not taken: retries, lost tasks, and the claims of workers that died (their
   heartbeat stopped).
"""
