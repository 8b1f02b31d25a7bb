/**
 * The app's icon, answered at `GET /favicon.ico` without a key: every browser asks for it on
 * its own, and an unanswerable request there used to count as a failed login.
 */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="6" fill="#1f3a5f"/>
<path d="M6 21h20M9 21v-6M16 21v-10M23 21v-6" stroke="#9fd3ff" stroke-width="3" fill="none" stroke-linecap="round"/>
</svg>
`;

export function faviconResponse(): Response {
  return new Response(FAVICON_SVG, {
    headers: {
      "content-type": "image/svg+xml",
      "cache-control": "public, max-age=86400",
    },
  });
}
