/**
 * memflow's REST API as the bundle calls it: `POST /api/v1/hooks/<event>`.
 *
 * A call never outlives its budget and never throws: whatever goes wrong it
 * answers `undefined` and the step goes on without memflow. A server that
 * let a call run out of time is left alone for a while, so a hung server
 * costs one budget, not one per step. The skip is kept in `memflow hook`'s
 * own state file, so `memflow status` shows it and both clients honour it.
 */

import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'

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
  // MEMFLOW_HOOK_TIMEOUT is in seconds, as for the Python client.
  const timeoutMs = number(config.timeoutMs, number(env.MEMFLOW_HOOK_TIMEOUT, 0) * 1000 || DEFAULTS.timeoutMs)
  return {
    url,
    apiKey: String(config.apiKey || env.MEMFLOW_API_KEY || ''),
    workspace: String(config.workspace || env.MEMFLOW_WORKSPACE || ''),
    app: String(config.app || env.MEMFLOW_APP || 'dsh'),
    timeoutMs,
    skipMs: number(config.skipMs, number(env.MEMFLOW_HOOK_SKIP_SECONDS, 0) * 1000 || DEFAULTS.skipMs),
    memflowCommand: String(config.memflowCommand || env.MEMFLOW_COMMAND || 'memflow'),
    // Starting Python: it runs before the first step, which waits one budget for it.
    resolverTimeoutMs: number(config.resolverTimeoutMs, Math.max(5000, timeoutMs)),
    declarations: config.declarations !== false,
    projection: config.projection !== false,
    sectionOrderBase: Number.isFinite(config.sectionOrderBase) ? config.sectionOrderBase : 10,
    maxSections: Number.isInteger(config.maxSections) && config.maxSections > 0 ? config.maxSections : 16,
    contextOrder: Number.isFinite(config.contextOrder) ? config.contextOrder : 500,
    statePath: String(config.statePath || skipStatePath(env)),
  }
}

/** Where `memflow hook` keeps its skips (memflow_site/client/hook.py, state_path). */
export function skipStatePath(env = process.env) {
  if (env.MEMFLOW_STATE_DIR) return join(env.MEMFLOW_STATE_DIR, 'hook-skip.json')
  const base = env.XDG_STATE_HOME || join(homedir(), '.local', 'state')
  return join(base, 'memflow', 'hook-skip.json')
}

function readSkips(path) {
  try {
    const data = JSON.parse(readFileSync(path, 'utf8'))
    return data !== null && typeof data === 'object' && !Array.isArray(data) ? data : {}
  } catch {
    return {}
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

  /** Whether calls are being skipped after a timeout (here, or by `memflow hook`). */
  skipping(now = Date.now()) {
    if (this.skipUntil > now) return true
    const until = readSkips(this.options.statePath)[this.options.url]?.until
    return typeof until === 'number' && until * 1000 > now
  }

  skipForAWhile(reason) {
    const now = Date.now()
    this.skipUntil = now + this.options.skipMs
    const path = this.options.statePath
    try {
      const skips = Object.fromEntries(
        Object.entries(readSkips(path)).filter(([, entry]) => entry?.until * 1000 > now),
      )
      skips[this.options.url] = { until: this.skipUntil / 1000, since: now / 1000, reason }
      mkdirSync(dirname(path), { recursive: true })
      const tmp = join(dirname(path), `.hook-skip.json.${process.pid}`)
      writeFileSync(tmp, `${JSON.stringify(skips, null, 1)}\n`)
      renameSync(tmp, path)
    } catch {
      // An unwritable state directory: the skip holds in this process only.
    }
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
        this.skipForAWhile(`no answer within ${timeoutMs / 1000} s`)
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
