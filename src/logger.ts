// The gateway's pino logger. Redaction paths are declared once, here: authorization headers,
// tokens, the upstream key and webhook secrets never reach a log line (a test proves it).
import { type DestinationStream, type Logger, pino } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["idempotency-key"]',
  'headers.authorization',
  'authorization',
  'token',
  '*.token',
  'apiKey',
  '*.apiKey',
  'upstreamApiKey',
  '*.upstreamApiKey',
  'secret',
  '*.secret',
  'secrets',
  '*.secrets',
  'webhookSecret',
  '*.webhookSecret',
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'cpgw' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
