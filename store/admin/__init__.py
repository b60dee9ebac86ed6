"""The store's admin pages, one module per model admin; Django imports this package
(admin.autodiscover), and importing the modules registers them."""
from store.admin import flexible_rules, instances, rules

__all__ = ("flexible_rules", "instances", "rules")
