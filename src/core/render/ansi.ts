// Tiny ANSI styling for the pure renderers (node:util styleText is off limits in core).
export type Tone = 'bold' | 'dim' | 'red' | 'green' | 'yellow';

const CODES: Readonly<Record<Tone, readonly [number, number]>> = {
  bold: [1, 22],
  dim: [2, 22],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
};

export type Painter = (tone: Tone, text: string) => string;

export function painter(color: boolean): Painter {
  if (!color) return (_tone, text) => text;
  return (tone, text) => {
    const [open, close] = CODES[tone];
    return `\u001b[${open}m${text}\u001b[${close}m`;
  };
}

/**
 * Names and messages come from YAML files and API responses: control characters in them must
 * not reach the terminal (an escape sequence in a phase name could rewrite the screen).
 */
export function safeText(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
