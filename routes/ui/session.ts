/**
 * The console's cookies and the small rules around them; the sessions themselves are
 * domain/console_sessions.ts over a storage port.
 */
export {
  constantTimeEqual,
  randomToken,
  type Session,
  SESSION_TTL_MS,
} from "../../domain/console_sessions.ts";

export const SESSION_COOKIE = "bridgebox_session";
export const LOGIN_CSRF_COOKIE = "bridgebox_login_csrf";

/** `Token <v1>` or `Bearer nbt_<key>.<secret>` from what a person pastes into the form. */
export function authorizationFor(pasted: string): string | null {
  const value = pasted.trim().replace(/^(Token|Bearer)\s+/i, "");
  if (value === "" || value.length > 512 || /\s/.test(value)) return null;
  return value.startsWith("nbt_") ? `Bearer ${value}` : `Token ${value}`;
}

/** A local path under /ui/ to return to after sign-in (never another site). */
export function safeNext(value: string | undefined | null): string {
  if (!value || !value.startsWith("/ui/") || value.startsWith("//") || value.includes("\\")) {
    return "/ui/";
  }
  return value;
}
