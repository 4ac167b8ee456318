/**
 * Typed errors by the server's error codes: every error body is `{"error": <code>, "message": <text>}`
 * where `code` is the name of the Python `OmnimemError` subclass (docs/http-api.md, "Errors"). The class
 * tree mirrors Python's, so `instanceof ForbiddenError` also catches a `ScopeError`.
 * `tests/integrations/test_typescript_schema.py` fails when a server code has no class here.
 */

/** Root of every error the client raises on purpose. */
export class OmnimemError extends Error {
  /** The server's error code (the class name), e.g. `"AuthError"`. */
  readonly code: string;
  /** The HTTP status of the reply (0 when no reply came). */
  readonly status: number;

  constructor(message: string, code?: string, status = 0) {
    super(message);
    this.name = new.target.name;
    this.code = code ?? new.target.name;
    this.status = status;
  }
}

export class InvalidInputError extends OmnimemError {}
export class InvalidTimeError extends InvalidInputError {}
export class MalformedDataError extends InvalidInputError {}
export class PayloadTooLargeError extends InvalidInputError {}
export class InvalidExtractionError extends InvalidInputError {}
export class UnsupportedMediaError extends InvalidInputError {}
export class CorruptMediaError extends InvalidInputError {}
export class EmptyMediaError extends InvalidInputError {}
export class MediaTooLargeError extends InvalidInputError {}
export class NotFoundError extends OmnimemError {}
export class StoreError extends OmnimemError {}
export class NotAStoreError extends StoreError {}
export class ReadOnlyStoreError extends StoreError {}
export class EmbedderMismatchError extends StoreError {}
export class SchemaVersionError extends StoreError {}
export class WriteConflictError extends StoreError {}
export class ConfigError extends OmnimemError {}
export class MissingDependencyError extends OmnimemError {}
export class AuthError extends OmnimemError {}
export class ForbiddenError extends OmnimemError {}
export class ScopeError extends ForbiddenError {}
export class CsrfError extends ForbiddenError {}
export class HostNotAllowedError extends ForbiddenError {}
export class RequestTimeoutError extends OmnimemError {}
export class RemoteUnsupportedError extends OmnimemError {}
/** The server could not be reached, or answered something that is not an omnimem reply. */
export class RemoteError extends OmnimemError {}
export class LLMError extends OmnimemError {}
export class LLMUnavailableError extends LLMError {}
export class LLMAuthError extends LLMError {}
export class LLMModelNotFoundError extends LLMError {}
export class LLMContextLengthError extends LLMError {}
export class LLMResponseFormatError extends LLMError {}
export class LLMNotConfiguredError extends LLMError {}

/** Too many requests for this key; `retryAfter` says when to try again (seconds). */
export class RateLimitError extends OmnimemError {
  readonly retryAfter: number;

  constructor(message: string, code?: string, status = 429, retryAfter = 1) {
    super(message, code, status);
    this.retryAfter = retryAfter;
  }
}

type ErrorClass = new (message: string, code?: string, status?: number) => OmnimemError;

/** Every error class by its code. */
export const ERROR_CLASSES: Readonly<Record<string, ErrorClass>> = {
  OmnimemError, InvalidInputError, InvalidTimeError, MalformedDataError, PayloadTooLargeError,
  InvalidExtractionError, UnsupportedMediaError, CorruptMediaError, EmptyMediaError, MediaTooLargeError,
  NotFoundError, StoreError, NotAStoreError, ReadOnlyStoreError, EmbedderMismatchError, SchemaVersionError,
  WriteConflictError, HostNotAllowedError, RequestTimeoutError,
  ConfigError, MissingDependencyError, AuthError, ForbiddenError, ScopeError, CsrfError, RateLimitError,
  RemoteUnsupportedError, RemoteError, LLMError, LLMUnavailableError, LLMAuthError, LLMModelNotFoundError,
  LLMContextLengthError, LLMResponseFormatError, LLMNotConfiguredError,
};

/** The typed error for an error reply (`OmnimemError` itself for a code this client does not know). */
export function errorFromReply(status: number, body: unknown, retryAfter: string | null): OmnimemError {
  if (typeof body === "object" && body !== null && typeof (body as { error?: unknown }).error === "string") {
    const { error: code, message } = body as { error: string; message?: unknown };
    const text = typeof message === "string" ? message : code;
    if (code === "RateLimitError") {
      return new RateLimitError(text, code, status, retryAfter === null ? 1 : Number(retryAfter));
    }
    const cls = Object.prototype.hasOwnProperty.call(ERROR_CLASSES, code) ? ERROR_CLASSES[code] : undefined;
    return cls ? new cls(text, code, status) : new OmnimemError(text, code, status);
  }
  return new RemoteError(`the server answered ${status} without an omnimem error body`, "RemoteError", status);
}
