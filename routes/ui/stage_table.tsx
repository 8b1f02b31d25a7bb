/** @jsxImportSource hono/jsx */
/**
 * The table of a sync job's stages. The job page lists finished stages per endpoint with their
 * run time; the sync page's live run has console.js fill the body (found by `data-stage-table`).
 */
import type { Child, FC } from "hono/jsx";

export const StageTable: FC<{ endpoint?: boolean; time?: boolean; children?: Child }> = (p) => (
  <table class="data stages" data-stage-table>
    <thead>
      <tr>
        <th scope="col">Stage</th>
        {p.endpoint && <th scope="col">Endpoint</th>}
        <th scope="col">State</th>
        <th scope="col">Progress</th>
        <th scope="col">Created</th>
        <th scope="col">Updated</th>
        <th scope="col">Unchanged</th>
        <th scope="col">Failed</th>
        {p.time && <th scope="col">Time</th>}
      </tr>
    </thead>
    <tbody>{p.children}</tbody>
  </table>
);
