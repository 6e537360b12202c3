"""The worker process from outside and inside: how it is started (``spawn``) and how it
confines itself (``confine``: ``namespaces``, ``privileges``, ``landlock``, ``seccomp``
with ``libseccomp``, and the ``memory`` ceiling)."""
