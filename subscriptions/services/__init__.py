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
   (`_evaluate_batch`): locks them (skipping those another round holds), previews each
   orchestration from one view of the pull snapshot, and for each result that differs from
   the last one pushed writes, in bulk, the PUSH job, the notification
   (`notifications.outbox` `deliveries_create`, which supersedes the subscription's older
   pending one) and the new result. A subscription whose committed orchestration would
   differ from its preview (reservations, tokens) is evaluated alone
   (`subscription_evaluate`, pushing.py `subscription_push_queue`).
4. After that commit the notifications are handed over: MQTT ones to one
   `notifications.deliver_batch` task per 100 (without a broker: the process's MQTT pool),
   HTTP ones to a `notifications.deliver` task each, on the queue of their transport.
5. The task claims its rows (PENDING → SENDING, fenced by the claim time), leaves out those
   with a newer notification or an older one still in flight, publishes on the process's
   broker connection (`notifications/batch_sending.py`, `notifications/transports.py`) while
   a heartbeat keeps the claims alive, and records each outcome: DELIVERED, FAILED for good,
   or PENDING again with backoff (those of a batch are retried together, by one task).
6. The sweeper (`notifications.sweep`, periodic, `notifications/sweeping.py`) hands over what
   is due and not taken: retries, lost tasks, and the claims of workers that died (their
   heartbeat stopped).
"""
