/**
 * memflow's REST API as the bundle calls it: `POST /api/v1/hooks/<event>`.
 *
 * A call never outlives its budget and never throws: whatever goes wrong it
 * answers `undefined` and the step goes on without memflow. A server that
 * let a call run out of time is left alone for a while, so a hung server
 * costs one budget, not one per step (as `memflow hook` does).
 */

export const DEFAULTS = Object.freeze({
  url: 'http://127.0.0.1:8000',
  timeoutMs: 1000,
  skipMs: 60_000,
})

/** Settings from the environment (the names `memflow hook` reads), then the row's config. */
export function resolveOptions(config = {}, env = process.env) {
  const number = (value, fallback) => {
    const parsed = Number(value)
    return Number.isFinite(parsed) && parsed > 0 ? parsed : fallback
  }
  const url = String(config.url || env.MEMFLOW_URL || DEFAULTS.url).replace(/\/+$/, '')
  return {
    url,
    apiKey: String(config.apiKey || env.MEMFLOW_API_KEY || ''),
    workspace: String(config.workspace || env.MEMFLOW_WORKSPACE || ''),
    app: String(config.app || env.MEMFLOW_APP || 'dsh'),
    // MEMFLOW_HOOK_TIMEOUT is in seconds, as for the Python client.
    timeoutMs: number(config.timeoutMs, number(env.MEMFLOW_HOOK_TIMEOUT, 0) * 1000 || DEFAULTS.timeoutMs),
    skipMs: number(config.skipMs, number(env.MEMFLOW_HOOK_SKIP_SECONDS, 0) * 1000 || DEFAULTS.skipMs),
    memflowCommand: String(config.memflowCommand || env.MEMFLOW_COMMAND || 'memflow'),
    resolverTimeoutMs: number(config.resolverTimeoutMs, 5000),
    declarations: config.declarations !== false,
    projection: config.projection !== false,
    sectionOrderBase: Number.isFinite(config.sectionOrderBase) ? config.sectionOrderBase : 10,
    maxSections: Number.isInteger(config.maxSections) && config.maxSections > 0 ? config.maxSections : 16,
    contextOrder: Number.isFinite(config.contextOrder) ? config.contextOrder : 500,
  }
}

export class MemflowClient {
  /**
   * @param {ReturnType<typeof resolveOptions>} options
   * @param {{ warn(...args: unknown[]): void, info?(...args: unknown[]): void }} logger
   */
  constructor(options, logger) {
    this.options = options
    this.logger = logger
    this.skipUntil = 0
  }

  /** Whether calls are being skipped after a timeout. */
  skipping(now = Date.now()) {
    return this.skipUntil > now
  }

  /**
   * One hook call. Resolves to the answer object, or `undefined` when there is
   * none to use (skipped, no server, an error answer, out of time).
   * @param {string} event memflow's event name (session-start, user-prompt, …)
   * @param {Record<string, unknown>} payload
   * @param {AbortSignal} [signal] the caller's own cancellation (the turn's)
   */
  async hook(event, payload, signal) {
    if (this.skipping()) return undefined
    const { url, apiKey, workspace, app, timeoutMs, skipMs } = this.options
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
        this.logger.warn('memflow: %s answered %d to %s: %s', url, response.status, event, detail)
        return undefined
      }
      const answer = JSON.parse(text)
      return answer !== null && typeof answer === 'object' ? answer : undefined
    } catch (error) {
      if (timeout.aborted) {
        this.skipUntil = Date.now() + skipMs
        this.logger.warn(
          'memflow: %s did not answer %s within %d ms; skipped for %d s',
          url, event, timeoutMs, Math.round(skipMs / 1000),
        )
      }
      // Refused at once (no server) or cancelled by the turn: nothing to say.
      return undefined
    }
  }
}
