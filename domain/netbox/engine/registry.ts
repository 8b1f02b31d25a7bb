/**
 * The registered models: by name and by API path, and who points at whom (reverse
 * relations, for filters by related objects and for the delete cascade).
 */
import type { FieldDef, ModelDef } from "../types.ts";

export const TAG_MODEL = "extras.tag";
export const CUSTOM_FIELD_MODEL = "extras.customfield";
/** The implicit `tags` field of every model that has tags. */
export const TAGS_FIELD: FieldDef = { type: "m2m", model: TAG_MODEL };

/** A field of `model` that refers to another model. */
export interface Relation {
  model: string;
  field: string;
  def: FieldDef;
}

export class ModelRegistry {
  readonly #models = new Map<string, ModelDef>();
  readonly #byPath = new Map<string, ModelDef>();
  /** target model → fields elsewhere that point at it. */
  readonly #reverse = new Map<string, Relation[]>();
  /** Generic FKs that may point at any model. */
  readonly #wildcard: Relation[] = [];

  register(...defs: ModelDef[]): void {
    for (const def of defs) {
      const name = `${def.app}.${def.model}`;
      if (this.#models.has(name)) throw new Error(`model ${name} registered twice`);
      const path = def.path.replace(/^\/+/, "").replace(/\/?$/, "/");
      const normalized: ModelDef = { ...def, path };
      this.#models.set(name, normalized);
      this.#byPath.set(path, normalized);
      for (const [field, f] of Object.entries(def.fields)) {
        if ((f.type === "fk" || f.type === "m2m") && f.model && !f.compute) {
          this.#pointsAt(f.model, { model: name, field, def: f });
        }
        if (f.type === "gfk" && !f.weak) {
          if (f.models === "*") this.#wildcard.push({ model: name, field, def: f });
          else {
            for (const target of f.models ?? []) {
              this.#pointsAt(target, { model: name, field, def: f });
            }
          }
        }
      }
      if (def.tags !== false) {
        this.#pointsAt(TAG_MODEL, { model: name, field: "tags", def: TAGS_FIELD });
      }
    }
  }

  #pointsAt(target: string, relation: Relation): void {
    const list = this.#reverse.get(target) ?? [];
    list.push(relation);
    this.#reverse.set(target, list);
  }

  models(): ModelDef[] {
    return [...this.#models.values()];
  }

  has(model: string): boolean {
    return this.#models.has(model);
  }

  definition(model: string): ModelDef {
    const def = this.#models.get(model);
    if (!def) throw new Error(`unknown model ${model}`);
    return def;
  }

  nameOf(def: ModelDef): string {
    return `${def.app}.${def.model}`;
  }

  /** The model served at an /api/ sub-path ("dcim/sites/"), if any. */
  byPath(path: string): ModelDef | undefined {
    return this.#byPath.get(path);
  }

  /** Fields elsewhere that may point at `model`, generic FKs to any model included. */
  referrersOf(model: string): Relation[] {
    return [...(this.#reverse.get(model) ?? []), ...this.#wildcard];
  }

  /** The field `?<fk>=<value>` filters pointing at `def` match (slug, else name). */
  naturalKey(def: ModelDef): string | null {
    if (def.naturalKey) return def.naturalKey;
    if (def.fields.slug) return "slug";
    if (def.fields.name) return "name";
    return null;
  }
}
