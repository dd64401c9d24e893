// Refusals Node makes before fastify has a request: a request line or headers it cannot parse
// (400, 414, 431), a request that did not arrive in time (408), an HTTP/1.1 request without Host
// (400), and CONNECT (405). Each is written on the raw socket in the upstream's error envelope
// with a fresh X-Request-Id, then the connection is closed: an app never sees Node's bare text.
//
// Must never: throw, write to a socket that can no longer be written to, or keep a connection
// open after refusing on it (the parser's state is unknown).
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { errorEnvelope } from '../errors.ts';
import { nextRequestId } from '../ops/request-id.ts';

/**
 * Node's low-level client errors (fastify's clientErrorHandler): 431 for headers too large, 408
 * for a request that did not arrive in time, 414 for a request line too long, otherwise 400. A
 * socket that can no longer be written to is only destroyed.
 */
export function clientErrorAnswer(err: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable || (err as { code?: string }).code === 'ECONNRESET') {
    socket.destroy(err);
    return;
  }
  const code = (err as { code?: string }).code ?? '';
  const status =
    code === 'HPE_HEADER_OVERFLOW'
      ? 431
      : code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? 408
        : code === 'HPE_URI_TOO_LONG'
          ? 414
          : 400;
  const messages: Record<number, string> = {
    400: 'The request could not be parsed',
    408: 'The request did not arrive in time',
    414: 'The request line is too long',
    431: 'The request headers are too large',
  };
  rawRefusal(socket, status, 'request', code || 'invalid', messages[status]!);
}

/**
 * An HTTP/1.1 request without Host (RFC 9112 3.2) is refused here, and true returned. Node would
 * answer it with a bare 400 itself; the server is made with requireHostHeader: false for this.
 */
export function refusedWithoutHost(req: IncomingMessage): boolean {
  if (req.headers.host !== undefined || req.httpVersionMajor !== 1 || req.httpVersionMinor < 1) return false;
  rawRefusal(req.socket, 400, 'host', 'missing', 'The request has no Host header');
  return true;
}

/** CONNECT is not a gateway method; without a 'connect' listener Node drops the socket silently. */
export function refuseConnect(_req: IncomingMessage, socket: Socket): void {
  rawRefusal(socket, 405, 'method', 'not_allowed', 'CONNECT is not supported');
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  414: 'URI Too Long',
  431: 'Request Header Fields Too Large',
};

/** A refusal written on the raw socket (no request object to answer through), then closed. */
function rawRefusal(socket: Socket, status: number, field: string, code: string, message: string): void {
  const requestId = nextRequestId();
  const body = JSON.stringify(
    errorEnvelope('validation_failed', requestId, { fields: [{ field, code, message }] }, message),
  );
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
  );
}
