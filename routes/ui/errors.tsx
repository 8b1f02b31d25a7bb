/** @jsxImportSource hono/jsx */
/** The console's error page: a human message and a way back, never a stack. */
import type { Context } from "hono";
import { Layout, Notice } from "./layout.tsx";
import type { ConsoleEnv } from "./context.ts";

export function errorPage(
  c: Context,
  status: number,
  title: string,
  message: string,
): Response | Promise<Response> {
  const cc = c as Context<ConsoleEnv>;
  return cc.html(
    <Layout title={title} auth={cc.get("auth")} session={cc.get("session")}>
      <div class="page-head">
        <h1>{title}</h1>
      </div>
      <Notice kind="error">{message}</Notice>
      <p>
        <a href="/ui/">Back to the overview</a>
      </p>
    </Layout>,
    status as 400,
  );
}
