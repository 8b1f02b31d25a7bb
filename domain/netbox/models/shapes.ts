/**
 * Field shapes NetBox 4.2 renders that carry no stored data here: related-object counts,
 * fields of features not modelled (cables, modules, config templates...) answered as NetBox
 * answers them when empty, and content-type choices.
 */
import type { FieldDef } from "../types.ts";

/** Always null (a relation to a feature not modelled: `cable`, `config_template`...). */
export const alwaysNull = (): FieldDef => ({ type: "json", compute: () => null });
/** Always an empty list (`asns`, `link_peers`, `vdcs`...). */
export const alwaysEmpty = (): FieldDef => ({ type: "json", compute: () => [] });
/** Always this value (`_occupied: false`, counts of components not modelled: 0). */
export const always = (value: unknown): FieldDef => ({ type: "json", compute: () => value });

/** The number of `model` records whose FK (or generic FK) `field` points at this record. */
export const countOf = (model: string, field: string): FieldDef => ({
  type: "int",
  readOnly: true,
  filter: false,
  count: { model, field },
});

/** A content type (app.model) limited to `types`, rendered as the plain string. */
export function contentType(
  types: ReadonlyArray<readonly [string, string]>,
  extra: Partial<FieldDef> = {},
): FieldDef {
  return { type: "choice", choices: types, index: true, contentType: true, ...extra };
}

/** A nullable choice that takes a blank ('' and null render null, as NetBox's ChoiceField). */
export function optionalChoice(choices: ReadonlyArray<readonly [string, string]>): FieldDef {
  return { type: "choice", choices, nullable: true, default: null, index: true, allowBlank: true };
}

export const WEIGHT_UNITS = [["kg", "Kilograms"], ["g", "Grams"], ["lb", "Pounds"], [
  "oz",
  "Ounces",
]] as const;
export const AIRFLOW = [
  ["front-to-rear", "Front to rear"],
  ["rear-to-front", "Rear to front"],
  ["left-to-right", "Left to right"],
  ["right-to-left", "Right to left"],
  ["side-to-rear", "Side to rear"],
  ["rear-to-side", "Rear to side"],
  ["bottom-to-top", "Bottom to top"],
  ["top-to-bottom", "Top to bottom"],
  ["passive", "Passive"],
  ["mixed", "Mixed"],
] as const;
