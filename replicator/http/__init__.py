"""The sidecar's HTTP edge: JSON request parsing (``wire``) and the server (``server``).

The endpoint logic lives in :mod:`replicator.service`; this package only turns bytes into
typed requests and answers into bytes, with 4xx answers that name the offending value.
"""
