"""The widths of the stored log entry's columns that the handler cuts records to fit.

Shared by the model (general/models.py) and the handler (general/log_handler.py), which is
imported when logging is configured, before the apps are ready, and so cannot take them from
the model."""

MAX_LOGGER_LENGTH = 100  # the reference's column
