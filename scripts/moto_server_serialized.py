"""moto_server, with DynamoDB requests one at a time.

moto applies a DynamoDB TransactWriteItems item by item without a lock,
so two concurrent transactions can both pass the same condition check,
which real DynamoDB never allows. The Agent's access-record counter
relies on that atomicity, and its tests run appenders concurrently. This
wraps moto's WSGI app so that DynamoDB requests (`X-Amz-Target:
DynamoDB_…`) take one lock: each then sees the result of the one before,
as a serializable service would. S3, KMS and the rest stay concurrent, and
connections are still served by threads. Same arguments as `moto_server`.
"""
import sys
import threading

import moto.server as server

_run_simple = server.run_simple
_lock = threading.Lock()


def _serialized_run_simple(host, port, app, **kwargs):
    def locked(environ, start_response):
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_"):
            return app(environ, start_response)
        with _lock:
            # Materialize the body inside the lock: a lazy iterable would
            # run moto's code after the lock is released.
            return list(app(environ, start_response))

    return _run_simple(host, port, locked, **kwargs)


server.run_simple = _serialized_run_simple

if __name__ == "__main__":
    server.main(sys.argv[1:])
