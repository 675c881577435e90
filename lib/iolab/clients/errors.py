"""Short, stable names for what went wrong with a request.

Metrics count errors by these kinds.
"""

import errno
import sys

DISCONNECTED = (errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED)
OUT_OF_ORDER = "out of order"  # a pipelined answer that belongs to another request
TIMEOUT = "timeout"


def error_kind(error: BaseException) -> str:
    """The kind of `error`: "timeout", "refused", "disconnected", "connect", or the exception's class name."""
    # Each client imports only its own library: aiohttp alone takes most of a second to import.
    aiohttp, requests = sys.modules.get("aiohttp"), sys.modules.get("requests")
    if aiohttp and isinstance(error, aiohttp.ClientConnectorError):
        error = error.os_error  # aiohttp wraps the socket error; the socket error says what happened
    if isinstance(error, TimeoutError) or (requests and isinstance(error, requests.Timeout)):
        return TIMEOUT
    # By errno, so that wrappers which are OSErrors too (aiohttp's ClientOSError) count the same.
    if isinstance(error, ConnectionRefusedError) or getattr(error, "errno", None) == errno.ECONNREFUSED:
        return "refused"
    if isinstance(error, (ConnectionResetError, BrokenPipeError)) or getattr(error, "errno", None) in DISCONNECTED:
        return "disconnected"
    if aiohttp and isinstance(error, aiohttp.ServerDisconnectedError):
        return "disconnected"
    if requests and isinstance(error, requests.exceptions.ChunkedEncodingError):
        return "disconnected"
    if requests and isinstance(error, requests.ConnectionError):
        text = str(error).lower()
        if "refused" in text:
            return "refused"
        if "reset" in text or "aborted" in text or "disconnected" in text:
            return "disconnected"
        return "connect"
    return type(error).__name__
