"""Arrowhead conventions shared by every app: names, versions, instance ids, UUIDs, paging,
timestamps (SPEC §1, reference-simple §4–5)."""
