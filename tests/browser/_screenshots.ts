/**
 * Where the browser tests' screenshots go. They are taken on every run (a page that cannot be
 * rendered to an image fails the test), but written to docs/screenshots/ only when
 * `UPDATE_SCREENSHOTS=1` (`npx -y deno@2.9.6 task screenshots`): a plain run, and CI, leave the
 * committed images, and so the tree, as they are.
 */
import type { Page, ScreenshotOptions } from "puppeteer-core";

export const SCREENSHOTS = new URL("../../docs/screenshots/", import.meta.url);

export function updatingScreenshots(): boolean {
  return Deno.env.get("UPDATE_SCREENSHOTS") === "1";
}

/** Takes the screenshot; writes docs/screenshots/<name>.png only when updating them. */
export async function screenshot(
  page: Page,
  name: string,
  options: ScreenshotOptions = {},
): Promise<void> {
  if (!updatingScreenshots()) {
    await page.screenshot({ ...options, path: undefined });
    return;
  }
  await Deno.mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ ...options, path: new URL(`${name}.png`, SCREENSHOTS).pathname });
}
