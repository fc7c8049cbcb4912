// Every API key the process has read is registered here, and every line that leaves the
// process through the CLI's error handler and loggers passes through redact().
const secrets = new Set<string>();

export function registerSecret(value: string): void {
  // Very short values would redact ordinary words; keys are long.
  if (value.length < 4) return;
  secrets.add(value);
  // A server may echo the key inside JSON text (a `"` or `\\` escaped) or in a URL (a base64
  // key's `+/=` percent-encoded); those forms must not get through either.
  for (const form of [JSON.stringify(value).slice(1, -1), encodeURIComponent(value)]) {
    if (form !== value) secrets.add(form);
  }
}

export function redact(text: string): string {
  let out = text;
  for (const s of secrets) {
    if (out.includes(s)) out = out.split(s).join('[REDACTED]');
  }
  return out;
}

/** Deep copy with every registered secret replaced, for objects that get logged or thrown. */
export function redactValue<T>(value: T): T {
  if (secrets.size === 0) return value;
  return JSON.parse(redact(JSON.stringify(value ?? null))) as T;
}

export function clearSecretsForTests(): void {
  secrets.clear();
}
