export * from "../_process.ts";
