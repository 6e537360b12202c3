"""The worker process from outside and inside: how it is started (``spawn``) and how it
confines itself (``confine``: ``namespaces``, ``privileges``, ``landlock``, ``seccomp``
with ``libseccomp``, and the ``memory`` ceiling); what the parent accepts from it (``account``),
and a REPL's worker kept between pieces of code (``session``)."""
