/**
 * memflow's REST API as the bundle calls it: `POST /api/v1/hooks/<event>`.
 *
 * A call never outlives its budget and never throws: whatever goes wrong it
 * answers `undefined` and the step goes on without memflow. A slow answer
 * costs its budget, and the rest of that turn goes without memflow (so a
 * hung server costs a turn one budget, not one per tool call); the next
 * session start or typed prompt tries again, so one busy moment on a loaded
 * machine never leaves the next session without its memory. Only a server that cannot be reached at all
 * (connection refused, no such host) is left alone for a while
 * (`skipMs`), in this process; either is said once, on the harness's log.
 */

export const DEFAULTS = Object.freeze({
  url: 'http://127.0.0.1:8000',
  timeoutMs: 1000,
  skipMs: 60_000,
  // The server's own limit on a hook body (MEMFLOW_HOOK_MAX_BYTES) by default.
  maxBytes: 1_048_576,
  toolCallTimeoutMs: 60_000,
})

/** Settings from the environment (the names `memflow hook` reads), then the row's config. */
export function resolveOptions(config = {}, env = process.env) {
  const number = (value, fallback) => {
    const parsed = Number(value)
    return Number.isFinite(parsed) && parsed > 0 ? parsed : fallback
  }
  const url = String(config.url || env.MEMFLOW_URL || DEFAULTS.url).replace(/\/+$/, '')
  // MEMFLOW_HOOK_TIMEOUT is in seconds, as for the Python client.
  const timeoutMs = number(config.timeoutMs, number(env.MEMFLOW_HOOK_TIMEOUT, 0) * 1000 || DEFAULTS.timeoutMs)
  return {
    url,
    apiKey: String(config.apiKey || env.MEMFLOW_API_KEY || ''),
    workspace: String(config.workspace || env.MEMFLOW_WORKSPACE || ''),
    app: String(config.app || env.MEMFLOW_APP || 'dsh'),
    timeoutMs,
    skipMs: number(config.skipMs, number(env.MEMFLOW_HOOK_SKIP_SECONDS, 0) * 1000 || DEFAULTS.skipMs),
    maxBytes: Math.max(1024, number(config.maxBytes, number(env.MEMFLOW_HOOK_MAX_BYTES, DEFAULTS.maxBytes))),
    memflowCommand: String(config.memflowCommand || env.MEMFLOW_COMMAND || 'memflow'),
    // Starting Python: it runs before the first step, which waits for it.
    resolverTimeoutMs: number(config.resolverTimeoutMs, Math.max(5000, timeoutMs)),
    declarations: config.declarations !== false,
    projection: config.projection !== false,
    // memflow's MCP tools, listed in the background and registered when they arrive.
    mcp: config.mcp !== false,
    toolCallTimeoutMs: number(config.toolCallTimeoutMs, DEFAULTS.toolCallTimeoutMs),
    sectionOrderBase: Number.isFinite(config.sectionOrderBase) ? config.sectionOrderBase : 10,
    maxSections: Number.isInteger(config.maxSections) && config.maxSections > 0 ? config.maxSections : 16,
    contextOrder: Number.isFinite(config.contextOrder) ? config.contextOrder : 500,
    // A file to append each extension point's span to (JSON lines), for measuring.
    timingsPath: String(config.timingsPath || env.MEMFLOW_DSH_TIMINGS || ''),
  }
}

// What Node's fetch says (in `cause.code`) when nothing listens or the host is unknown.
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET'])

/** The code of a failed fetch that never reached a server, else undefined. */
export function unreachableCode(error) {
  for (let cause = error; cause; cause = cause.cause) {
    if (UNREACHABLE.has(cause.code)) return cause.code
    if (Array.isArray(cause.errors)) {
      const found = cause.errors.map(e => e?.code).find(code => UNREACHABLE.has(code))
      if (found) return found
    }
  }
  return undefined
}

// After a slow answer, the calls that start a session or a turn try again; the rest wait for one.
const TRIED_AGAIN = new Set(['session-start', 'user-prompt'])

export class MemflowClient {
  /**
   * @param {ReturnType<typeof resolveOptions>} options
   * @param {{ warn(...args: unknown[]): void }} logger
   */
  constructor(options, logger) {
    this.options = options
    this.logger = logger
    this.unreachableUntil = 0
    this.slow = false
    this.said = new Set()
  }

  sayOnce(key, format, ...args) {
    if (this.said.has(key)) return
    this.said.add(key)
    this.logger.warn(format, ...args)
  }

  /** Whether the server could not be reached a moment ago (calls are not even tried). */
  unreachable(now = Date.now()) {
    return this.unreachableUntil > now
  }

  /** A failed call: unreachable (left alone a while) or slow (said, and tried again next time). */
  failed(error, event, timedOut) {
    const { url, timeoutMs, skipMs } = this.options
    if (timedOut) {
      this.slow = true
      this.sayOnce(`slow:${event}`,
        'memflow: %s did not answer %s within %d ms; dsh went on without it (the next call tries again)',
        url, event, timeoutMs)
      return
    }
    const code = unreachableCode(error)
    if (code !== undefined) {
      this.unreachableUntil = Date.now() + skipMs
      this.sayOnce('unreachable',
        'memflow: %s cannot be reached (%s); dsh goes on without memflow and tries again every %d s',
        url, code, Math.round(skipMs / 1000))
    }
    // Anything else (cancelled by the turn): nothing to say.
  }

  /**
   * One hook call. Resolves to the answer object, or `undefined` when there is
   * none to use (unreachable, an error answer, out of time).
   * @param {string} event memflow's event name (session-start, user-prompt, …)
   * @param {Record<string, unknown>} payload
   * @param {AbortSignal} [signal] the caller's own cancellation (the turn's)
   */
  async hook(event, payload, signal) {
    if (this.unreachable()) return undefined
    if (this.slow && !TRIED_AGAIN.has(event)) return undefined
    const { url, apiKey, workspace, app, timeoutMs } = this.options
    const body = { app, ...(workspace ? { workspace } : {}), ...payload }
    const timeout = AbortSignal.timeout(timeoutMs)
    const signals = signal ? [timeout, signal] : [timeout]
    try {
      const response = await fetch(`${url}/api/v1/hooks/${event}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${apiKey}` },
        body: JSON.stringify(body),
        signal: AbortSignal.any(signals),
      })
      const text = await response.text()
      if (!response.ok) {
        let detail = text.slice(0, 200)
        try { detail = JSON.parse(text).detail ?? detail } catch { /* not JSON */ }
        this.sayOnce(`status:${response.status}`, 'memflow: %s answered %d to %s: %s', url, response.status, event, detail)
        return undefined
      }
      this.slow = false
      const answer = JSON.parse(text)
      return answer !== null && typeof answer === 'object' ? answer : undefined
    } catch (error) {
      this.failed(error, event, timeout.aborted)
      return undefined
    }
  }
}
