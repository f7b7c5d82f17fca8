"""A small recipe box over MCP (stdio): a second server of a user's own, for the generic demo agent's tests.

Nothing in it echoes the bundled example or the bookshop: other tool names, an
integer id named `recipe_id`, enums, an optional number, and data held in
memory. Tools (read-only):

- `find_recipes(query="", diet="any", max_minutes=None)`: recipes whose name or
  ingredients contain `query`, quickest first, as `{"recipes": [...], "total": n}`;
- `recipe_card(recipe_id)`: one recipe in full: ingredients, steps, servings;
- `convert_units(amount, from_unit, to_unit)`: kitchen units of one kind (weight
  or volume); converting between kinds fails with a tool error.

Run it with `python pantry_server.py` (stdio).
"""

from __future__ import annotations

from typing import Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

RECIPES = [
    {
        "recipe_id": 11,
        "name": "Red Lentil Soup",
        "diet": "vegan",
        "minutes": 35,
        "serves": 4,
        "ingredients": ["red lentils", "onion", "cumin", "vegetable stock"],
        "steps": ["Soften the onion with the cumin.", "Add lentils and stock.", "Simmer 25 minutes."],
    },
    {
        "recipe_id": 12,
        "name": "Chickpea Salad",
        "diet": "vegan",
        "minutes": 10,
        "serves": 2,
        "ingredients": ["chickpeas", "cucumber", "lemon", "parsley"],
        "steps": ["Chop everything.", "Dress with lemon."],
    },
    {
        "recipe_id": 13,
        "name": "Mushroom Omelette",
        "diet": "vegetarian",
        "minutes": 15,
        "serves": 1,
        "ingredients": ["eggs", "mushrooms", "butter"],
        "steps": ["Fry the mushrooms in butter.", "Add beaten eggs and fold."],
    },
    {
        "recipe_id": 14,
        "name": "Roast Chicken with Lentils",
        "diet": "any",
        "minutes": 90,
        "serves": 6,
        "ingredients": ["chicken", "green lentils", "thyme"],
        "steps": ["Roast the chicken.", "Cook the lentils in the juices."],
    },
    {
        "recipe_id": 15,
        "name": "Peanut Noodles",
        "diet": "vegan",
        "minutes": 20,
        "serves": 2,
        "ingredients": ["noodles", "peanut butter", "soy sauce", "lime"],
        "steps": ["Boil the noodles.", "Toss with the sauce."],
    },
]
GRAMS = {"grams": 1.0, "kilograms": 1000.0, "ounces": 28.3495}
MILLILITRES = {"millilitres": 1.0, "cups": 240.0, "tablespoons": 15.0}
Unit = Literal["grams", "kilograms", "ounces", "millilitres", "cups", "tablespoons"]

app = MCPServer("pantry", log_level="WARNING")


class RecipeSummary(BaseModel):
    recipe_id: int
    name: str
    diet: str
    minutes: int


class RecipeList(BaseModel):
    recipes: list[RecipeSummary]
    total: int


class RecipeCard(RecipeSummary):
    serves: int
    ingredients: list[str]
    steps: list[str]


class Converted(BaseModel):
    amount: float
    unit: str


def matches(recipe: dict, query: str, diet: str, max_minutes: int | None) -> bool:
    text = " ".join([recipe["name"], *recipe["ingredients"]]).lower()
    if query.lower() not in text:
        return False
    if diet != "any" and recipe["diet"] != diet and not (diet == "vegetarian" and recipe["diet"] == "vegan"):
        return False
    return max_minutes is None or recipe["minutes"] <= max_minutes


@app.tool(
    description="Find recipes whose name or ingredients contain `query` (all recipes when empty), "
    "quickest first. `diet` keeps vegetarian or vegan ones; `max_minutes` caps the cooking time."
)
def find_recipes(
    query: str = "",
    diet: Literal["any", "vegetarian", "vegan"] = "any",
    max_minutes: int | None = None,
) -> RecipeList:
    found = [r for r in RECIPES if matches(r, query, diet, max_minutes)]
    found.sort(key=lambda r: (r["minutes"], r["recipe_id"]))
    return RecipeList(recipes=[RecipeSummary(**r) for r in found], total=len(found))


@app.tool(
    description="The full card of one recipe_id: ingredients, steps, servings and how long it takes to cook."
)
def recipe_card(recipe_id: int) -> RecipeCard:
    for recipe in RECIPES:
        if recipe["recipe_id"] == recipe_id:
            return RecipeCard(**recipe)
    raise ToolError(f"no recipe with id {recipe_id}")


@app.tool(description="Convert an amount between kitchen units of the same kind (weight or volume).")
def convert_units(amount: float, from_unit: Unit, to_unit: Unit) -> Converted:
    for table in (GRAMS, MILLILITRES):
        if from_unit in table and to_unit in table:
            return Converted(amount=round(amount * table[from_unit] / table[to_unit], 2), unit=to_unit)
    raise ToolError(f"cannot convert {from_unit} to {to_unit}: one is a weight and the other a volume")


if __name__ == "__main__":
    app.run()
