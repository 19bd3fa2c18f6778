#!/usr/bin/env python3
"""The page `sift serve` serves at /, in a real browser (Chromium through
Selenium): against the conformance company data set (read-write), a store
Apple's Core Data wrote (read-only, from ../shared/coredata-stores, used on a
copy) and, when SIFT_POSTGRES_URL names a server, the company in a PostgreSQL
schema. Every state is saved as a screenshot in the artifacts folder.

    python3 Tests/Browser/page_test.py --sift .build/debug/sift --artifacts .build/browser

Chromium and chromedriver come from Debian's packages, Selenium from PyPI
(.ci/run installs them). Exits non-zero when a check fails.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPANY = os.path.join(ROOT, "Tests", "SiftTests", "Fixtures", "company.json")
CORE_DATA = os.path.join(ROOT, "..", "shared", "coredata-stores", "coredataplus-samplemodel2-v2", "SampleModel2_V2.sqlite")
HOSTILE = "<script>document.title='owned'</script><img src=x onerror=\"document.title='owned'\">&amp;"
# A store file's name the page's header shows (written into the page's HTML by the server: escaped).
HOSTILE_FILE = "co\"mp'any<img src=x onerror=\"document.title='owned'\">&amp;.sqlite"


class Server:
    """`sift serve` on 127.0.0.1, on a free port, until stopped."""

    def __init__(self, sift, store, writable, scratch, extra=(), name=None):
        source = [store, *extra] if store == "--postgres" else ["--store", store]
        arguments = [sift, "serve", *source, "--port", "0"] + (["--writable"] if writable else [])
        name = name or os.path.basename(store)
        self.out = open(os.path.join(scratch, name + ".out"), "w+")
        self.err = open(os.path.join(scratch, name + ".err"), "w+")
        self.process = subprocess.Popen(arguments, stdout=self.out, stderr=self.err)
        deadline = time.time() + 30
        self.url = None
        while time.time() < deadline and self.url is None:
            self.out.seek(0)
            for line in self.out:
                if line.startswith("listening on "):
                    self.url = line.split(" ", 2)[2].strip()
            time.sleep(0.05)
        if self.url is None:
            self.err.seek(0)
            raise RuntimeError("sift serve did not start: " + self.err.read())

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=20) as answer:
            return json.loads(answer.read())

    def post(self, path, body):
        request = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=20) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=20)


class Run:
    def __init__(self, driver, artifacts):
        self.driver = driver
        self.artifacts = artifacts
        self.failures = []
        self.passed = 0
        self.shots = 0

    def wait(self, condition, timeout=15, message=""):
        # The page redraws what it shows: an element found may be replaced before it is read.
        return WebDriverWait(self.driver, timeout, ignored_exceptions=[StaleElementReferenceException]).until(condition, message)

    def testid(self, name):
        return self.wait(EC.presence_of_element_located((By.CSS_SELECTOR, f'[data-testid="{name}"]')), message=f"no element {name}")

    def visible(self, name):
        return self.wait(EC.visibility_of_element_located((By.CSS_SELECTOR, f'[data-testid="{name}"]')), message=f"{name} not shown")

    def click(self, name, inner=""):
        selector = f'[data-testid="{name}"]{inner}'
        for attempt in range(3):
            element = self.wait(EC.element_to_be_clickable((By.CSS_SELECTOR, selector)), message=f"{name} not clickable")
            try:
                self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
                element.click()
                return element
            except StaleElementReferenceException:
                if attempt == 2:
                    raise

    def text_starts(self, name, prefix, timeout=15):
        self.wait(lambda d: d.find_element(By.CSS_SELECTOR, f'[data-testid="{name}"]').text.startswith(prefix), timeout,
                  f"{name} does not start with {prefix!r}")

    def shot(self, name):
        self.shots += 1
        path = os.path.join(self.artifacts, f"{self.shots:02d}-{name}.png")
        self.driver.save_screenshot(path)

    def check(self, name, body):
        started = time.time()
        try:
            body()
            self.passed += 1
            print(f"✔ {name} ({time.time() - started:.1f} s)", flush=True)
        except Exception as error:  # every failure is reported, then the run goes on
            self.failures.append(name)
            message = (str(error).strip().splitlines() or [type(error).__name__])[0]
            where = traceback.extract_tb(error.__traceback__)
            lines = ", ".join(str(frame.lineno) for frame in where if frame.filename == __file__)
            print(f"✘ {name}: {message} (page_test.py lines {lines})", flush=True)
            self.shot("FAILED-" + name.replace(" ", "-")[:40])
        finally:
            self.shot(name.replace(" ", "-")[:48])

    def logs(self):
        """The browser console's errors (a violation of the content security policy is one)."""
        try:
            return [entry for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]
        except Exception:
            return []


def sift_count(sift, store, entity, predicate):
    """`sift count` on a store file, or on a PostgreSQL schema given as (url, schema)."""
    source = ["--postgres", store[0], "--schema", store[1]] if isinstance(store, tuple) else ["--store", store]
    out = subprocess.run([sift, "count", *source, "--entity", entity, predicate], check=True, capture_output=True, text=True)
    return int(out.stdout.strip())


def make_driver(downloads=None):
    options = webdriver.ChromeOptions()
    if downloads:
        options.add_experimental_option("prefs", {"download.default_directory": downloads, "download.prompt_for_download": False})
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1360,900",
                     "--no-proxy-server", "--disable-background-networking", "--disable-extensions"]:
        options.add_argument(argument)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium:
        options.binary_location = chromium
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    if downloads:
        driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    return driver


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sift", required=True)
    parser.add_argument("--artifacts", required=True)
    arguments = parser.parse_args()
    sift = os.path.abspath(arguments.sift)
    artifacts = os.path.abspath(arguments.artifacts)
    shutil.rmtree(artifacts, ignore_errors=True)
    os.makedirs(artifacts)
    scratch = tempfile.mkdtemp(prefix="sift-browser-")

    company = os.path.join(scratch, "company.sqlite")
    subprocess.run([sift, "import", "--store", company, "--data", COMPANY], check=True, capture_output=True)
    servers = []
    company_server = Server(sift, company, True, scratch)
    servers.append(company_server)
    # A hostile string, stored as any value is.
    status, answer = company_server.post("/v1/save", {"inserts": [{"temporaryID": -1, "entity": "Tag", "values": {"name": HOSTILE}}]})
    assert status == 200, answer
    hostile_key = answer["keys"][0]["key"]

    core_data_server = None
    if os.path.exists(CORE_DATA):
        copy = os.path.join(scratch, "SampleModel2_V2.sqlite")
        shutil.copy(CORE_DATA, copy)
        core_data_server = Server(sift, copy, False, scratch)
        servers.append(core_data_server)
    else:
        print(f"note: {CORE_DATA} is absent: the Core Data store's checks are skipped", flush=True)

    # A PostgreSQL schema, when a server is configured (.ci/run starts one).
    postgres_server = None
    postgres_url = os.environ.get("SIFT_POSTGRES_URL")
    if postgres_url:
        schema = f"sift_page_{os.getpid()}"
        subprocess.run([sift, "import", "--postgres", postgres_url, "--schema", schema, "--data", COMPANY], check=True, capture_output=True)
        postgres_server = Server(sift, "--postgres", False, scratch, extra=[postgres_url, "--schema", schema], name="postgres")
        servers.append(postgres_server)
    else:
        print("note: SIFT_POSTGRES_URL is not set: the PostgreSQL store's checks are skipped", flush=True)

    downloads = os.path.join(scratch, "downloads")
    os.makedirs(downloads)
    driver = make_driver(downloads)
    run = Run(driver, artifacts)
    base = company_server.url
    try:
        def open_page():
            driver.get(base + "/")
            run.wait(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")
            entities = run.testid("entity-list")
            for name in ["Department", "Employee", "Tag"]:
                entities.find_element(By.CSS_SELECTOR, f'[data-testid="entity-{name}"]')
            run.text_starts("count-Employee", str(sift_count(sift, company, "Employee", "TRUEPREDICATE")))
            run.testid("diagram")
        run.check("page opens with the model", open_page)

        def choose_entity():
            run.click("entity-Employee", " > a")
            run.visible("results-table")
            run.wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, '[data-testid="results-table"] tbody tr')) > 0)
            total = sift_count(sift, company, "Employee", "TRUEPREDICATE")
            run.text_starts("result-count", f"{total} ")
        run.check("choose an entity", choose_entity)

        predicate = "age > 40 AND department.name BEGINSWITH[c] 'e'"

        def type_predicate():
            field = run.testid("predicate-input")
            field.clear()
            field.send_keys(predicate)
            expected = sift_count(sift, company, "Employee", predicate)
            run.text_starts("result-count", f"{expected} ")
            assert "predicate=" in driver.current_url, driver.current_url
            rows = driver.find_elements(By.CSS_SELECTOR, '[data-testid="results-table"] tbody tr')
            assert len(rows) == min(expected, 50) or expected == 0, (len(rows), expected)
        run.check("type a predicate: the count is sift count's", type_predicate)

        def link_reproduces():
            url = driver.current_url
            driver.get(url)
            expected = sift_count(sift, company, "Employee", predicate)
            run.text_starts("result-count", f"{expected} ")
            assert run.testid("predicate-input").get_attribute("value") == predicate
        run.check("the URL reproduces the view", link_reproduces)

        def broken_predicate():
            field = run.testid("predicate-input")
            field.clear()
            field.send_keys("agee > 40")
            diagnostic = run.visible("diagnostic")
            run.wait(lambda d: "agee" in diagnostic.text and "^" in diagnostic.text)
            assert "did you mean 'age'" in diagnostic.text, diagnostic.text
            run.shot("diagnostic")
            run.click("apply-suggestion")
            run.wait(lambda d: run.testid("predicate-input").get_attribute("value") == "age > 40")
            run.text_starts("result-count", str(sift_count(sift, company, "Employee", "age > 40")))
            field = run.testid("predicate-input")
            field.send_keys(" AND (")
            run.wait(lambda d: d.find_element(By.CSS_SELECTOR, '[data-testid="diagnostic"]').is_displayed())
        run.check("a broken predicate shows its diagnostic", broken_predicate)

        def completion():
            field = run.testid("predicate-input")
            field.clear()
            field.send_keys("department.bu")
            run.visible("completion-budget")
            field.send_keys(Keys.TAB)
            run.wait(lambda d: run.testid("predicate-input").get_attribute("value") == "department.budget")
            field.send_keys(" > 1000000")
            run.text_starts("result-count", str(sift_count(sift, company, "Employee", "department.budget > 1000000")))
        run.check("key paths complete through relationships", completion)

        def paging():
            driver.get(base + "/?entity=Employee&sort=name:asc")
            run.visible("results-table")
            total = sift_count(sift, company, "Employee", "TRUEPREDICATE")
            run.text_starts("result-count", str(total))
            first = [r.text for r in driver.find_elements(By.CSS_SELECTOR, '[data-testid="results-table"] tbody tr td:first-child')]
            seen = list(first)
            pages = 1
            while run.testid("page-next").is_enabled():
                before = run.testid("page-number").text
                run.click("page-next")
                run.wait(lambda d: run.testid("page-number").text != before)
                seen += [r.text for r in driver.find_elements(By.CSS_SELECTOR, '[data-testid="results-table"] tbody tr td:first-child')]
                pages += 1
            assert len(seen) == total and len(set(seen)) == total, (len(seen), len(set(seen)), total)
            run.shot("last-page")
            for _ in range(pages - 1):
                before = run.testid("page-number").text
                run.click("page-prev")
                run.wait(lambda d: run.testid("page-number").text != before)
            again = [r.text for r in driver.find_elements(By.CSS_SELECTOR, '[data-testid="results-table"] tbody tr td:first-child')]
            assert again == first, (again[:5], first[:5])
        run.check("page forward and back (keyset)", paging)

        def keys_shown():
            return [int(r.get_attribute("data-testid")[4:])
                    for r in driver.find_elements(By.CSS_SELECTOR, '[data-testid="results-table"] tbody tr[data-testid^="row-"]')]

        def header_name():
            # Issue 54: the header showed the store's UUID; now its file's name, the UUID as the tooltip.
            identifier = company_server.get("/v1/store")["identifier"]
            driver.get(base + "/")
            name = run.visible("store-name")
            assert name.text == "company.sqlite", name.text
            assert name.get_attribute("title") == identifier, (name.get_attribute("title"), identifier)
            # A file name with markup in it is written into the page escaped, and shown as text.
            hostile_store = os.path.join(scratch, HOSTILE_FILE)
            subprocess.run([sift, "import", "--store", hostile_store, "--data", COMPANY], check=True, capture_output=True)
            hostile_server = Server(sift, hostile_store, False, scratch, name="hostile-name")
            try:
                driver.get(hostile_server.url + "/")
                run.wait(lambda d: run.testid("store-name").text == HOSTILE_FILE, message="the hostile name is not shown as text")
                assert not driver.find_elements(By.CSS_SELECTOR, "header img") and driver.title != "owned", driver.title
            finally:
                hostile_server.stop()
        run.check("the header shows the store's name, its identifier as the tooltip", header_name)

        def invalid_predicate_clears_rows():
            # Issue 54: an invalid predicate left the previous predicate's rows (and pages) on show.
            driver.get(base + "/?entity=Employee&predicate=" + urllib.request.quote("age > 40"))
            run.text_starts("result-count", f"{sift_count(sift, company, 'Employee', 'age > 40')} ")
            run.wait(lambda d: keys_shown(), message="no rows")
            field = run.testid("predicate-input")
            field.send_keys(" AND (")
            run.text_starts("result-count", "invalid predicate")
            run.wait(lambda d: not keys_shown(), message="the previous predicate's rows are still shown")
            assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="page-next"]'), "the previous predicate's pager is still shown"
            run.shot("invalid-predicate-no-rows")
            field.send_keys(Keys.BACK_SPACE * 6)
            run.text_starts("result-count", f"{sift_count(sift, company, 'Employee', 'age > 40')} ")
            run.wait(lambda d: keys_shown(), message="no rows once the predicate is valid again")
        run.check("an invalid predicate empties the table", invalid_predicate_clears_rows)

        def first_last_jump():
            # Issue 54: many pages were reachable only by Previous/Next. First, Last and a page number to go to,
            # with ties across pages (age, isManager) and with no sort, at 7 objects a page.
            total = sift_count(sift, company, "Employee", "TRUEPREDICATE")
            size = 7
            pages = -(-total // size)

            def page_is(number, expected):
                run.wait(lambda d: run.testid("page-number").text.startswith(f"Page {number} of {pages}"), message=f"not on page {number}")
                run.wait(lambda d: keys_shown() == expected, message=f"page {number} does not show {expected}")

            def turn(button, number, expected):
                run.click(button)
                page_is(number, expected)

            def jump(number, expected, typed=None):
                field = run.testid("page-jump-input")
                field.send_keys(Keys.CONTROL, "a")
                field.send_keys(str(typed or number), Keys.ENTER)
                page_is(number, expected)

            for sort in ["age:asc", "isManager:asc", ""]:
                keys = [row["key"] for row in company_server.post("/v1/fetch", {
                    "entity": "Employee", "limit": 1000,
                    "sort": [{"keyPath": k.split(":")[0], "ascending": k.endswith(":asc")} for k in sort.split(",") if k]})[1]["objects"]]
                chunk = [keys[i * size:(i + 1) * size] for i in range(pages)]
                url = base + f"/?entity=Employee&size={size}" + (f"&sort={sort}" if sort else "")
                driver.get(url)
                page_is(1, chunk[0])
                assert not run.testid("page-first").is_enabled() and run.testid("page-last").is_enabled()
                turn("page-last", pages, chunk[-1])
                assert not run.testid("page-next").is_enabled() and not run.testid("page-last").is_enabled()
                turn("page-prev", pages - 1, chunk[-2])
                turn("page-first", 1, chunk[0])
                jump(4, chunk[3])
                assert "page=4" in driver.current_url, driver.current_url
                turn("page-next", 5, chunk[4])
                turn("page-next", 6, chunk[5])
                turn("page-prev", 5, chunk[4])
                jump(pages, chunk[-1], typed=pages + 10)  # past the last page: the last
                # A link to a page shows that page.
                driver.get(url + "&page=3")
                page_is(3, chunk[2])
                turn("page-next", 4, chunk[3])
            run.shot("page-jump")
        run.check("first, last and a page jump", first_last_jump)

        def choose_columns():
            # Issue 54: columns are chosen (kept in the URL), and the table fits a 1400 px window.
            driver.set_window_size(1400, 900)
            long_name = "A long tag " + "with very many words in it " * 12
            status, answer = company_server.post("/v1/save", {"inserts": [{"temporaryID": -1, "entity": "Tag", "values": {"name": long_name}}]})
            assert status == 200, answer
            long_key = answer["keys"][0]["key"]
            try:
                driver.get(base + "/?entity=Employee")
                run.wait(lambda d: keys_shown(), message="no rows")
                width, page_width, table_width = driver.execute_script(
                    "return [window.innerWidth, document.documentElement.scrollWidth,"
                    " document.querySelector('[data-testid=\"results-table\"]').getBoundingClientRect().width]")
                assert width <= 1400 and page_width <= width and table_width <= 1400, (width, page_width, table_width)
                # A long value is cut with an ellipsis; its cell's title holds it whole.
                driver.get(base + "/?entity=Tag&predicate=" + urllib.request.quote("name BEGINSWITH 'A long tag'"))
                cell = run.wait(lambda d: d.find_element(By.CSS_SELECTOR, f'[data-testid="row-{long_key}"] td .cell'))
                cut = driver.execute_script("return [arguments[0].scrollWidth > arguments[0].clientWidth, getComputedStyle(arguments[0]).textOverflow,"
                                            " document.documentElement.scrollWidth <= window.innerWidth]", cell)
                assert cut == [True, "ellipsis", True] and cell.get_attribute("title") == long_name, (cut, cell.get_attribute("title"))
                # The Columns control: nickname and tags off; the URL keeps the choice.
                driver.get(base + "/?entity=Employee")
                run.wait(lambda d: keys_shown(), message="no rows")
                run.click("columns-button")
                run.click("column-choice-nickname")
                run.click("column-choice-tags")
                run.wait(lambda d: not d.find_elements(By.CSS_SELECTOR, '[data-testid="column-nickname"]'), message="nickname is still shown")
                run.wait(lambda d: not d.find_elements(By.CSS_SELECTOR, '[data-testid="column-tags"]'), message="tags is still shown")
                query = urllib.parse.parse_qs(urllib.parse.urlparse(driver.current_url).query)
                columns = query.get("columns", [""])[0].split(",")
                assert "nickname" not in columns and "tags" not in columns and "name" in columns and "department" in columns, driver.current_url
                run.shot("columns-chosen")
                driver.get(driver.current_url)
                run.wait(lambda d: keys_shown(), message="no rows")
                headers = [h.get_attribute("data-testid") for h in driver.find_elements(By.CSS_SELECTOR, '[data-testid="results-table"] thead th')]
                assert "column-name" in headers and "column-department" in headers, headers
                assert "column-nickname" not in headers and "column-tags" not in headers, headers
                assert not run.testid("column-choice-nickname").is_selected() and run.testid("column-choice-name").is_selected()
                cells = driver.find_elements(By.CSS_SELECTOR, '[data-testid="results-table"] tbody tr:first-child td')
                assert len(cells) == len(headers), (len(cells), headers)
            finally:
                driver.set_window_size(1360, 900)
                row = company_server.post("/v1/objects", {"entity": "Tag", "keys": [long_key]})[1]["objects"][0]
                company_server.post("/v1/save", {"deletes": [{"entity": "Tag", "key": long_key, "expectedVersion": row["version"]}]})
        run.check("choose columns (kept in the URL); the table fits 1400 px", choose_columns)

        def facets():
            # Issue 54: facets, as Datasette has: the counts of a key path's values under the predicate, a click filters.
            predicate = "age > 30"
            driver.get(base + "/?entity=Employee&predicate=" + urllib.request.quote(predicate))
            run.text_starts("result-count", f"{sift_count(sift, company, 'Employee', predicate)} ")
            Select(run.testid("facet-select")).select_by_value("department.name")
            run.wait(lambda d: d.find_elements(By.CSS_SELECTOR, '[data-testid="facet-value"]'), message="no facet values")
            assert "facet=department.name" in driver.current_url, driver.current_url

            def shown_facets():
                return {v.get_attribute("data-value"): int(v.get_attribute("data-count"))
                        for v in driver.find_elements(By.CSS_SELECTOR, '[data-testid="facet-value"]')}
            values = shown_facets()
            assert 1 < len(values) <= 11, values
            for value, count in values.items():
                term = "department.name == nil" if value == "nil" else f"department.name == {json.dumps(value)}"
                assert count == sift_count(sift, company, "Employee", f"({predicate}) AND {term}"), (value, count)
            counts = list(values.values())
            assert counts[:len(counts) - ("nil" in values)] == sorted(counts[:len(counts) - ("nil" in values)], reverse=True), values
            run.shot("facets")
            # One click filters (a value with '&' in it, quoted in the predicate), and the facet follows.
            chosen = "Research & Development"
            assert chosen in values, values
            run.click("facet-value", f'[data-value="{chosen}"]')
            expected = sift_count(sift, company, "Employee", f"({predicate}) AND department.name == 'Research & Development'")
            run.text_starts("result-count", f"{expected} ")
            assert run.testid("predicate-input").get_attribute("value") == f'{predicate} AND department.name == "{chosen}"'
            run.wait(lambda d: shown_facets() == {chosen: expected}, message="the facet did not follow the predicate")
            assert len(keys_shown()) == expected
            # The URL reproduces the view, facet included.
            driver.get(driver.current_url)
            run.wait(lambda d: shown_facets() == {chosen: expected}, message="the link lost the facet")
            # A value with quotes and markup: quoted safely, one click finds its one object.
            driver.get(base + "/?entity=Tag&facet=name&predicate=" + urllib.request.quote("name BEGINSWITH '<script>'"))
            run.wait(lambda d: shown_facets() == {HOSTILE: 1}, message="the hostile tag's facet is not shown")
            driver.find_element(By.CSS_SELECTOR, '[data-testid="facet-value"]').click()
            run.wait(lambda d: run.testid("predicate-input").get_attribute("value").endswith(" AND name == " + json.dumps(HOSTILE)),
                     message="the term is not quoted")
            run.text_starts("result-count", "1 ")
            assert driver.title != "owned"
            # A date's facet (the API's dates are ISO 8601 text): a click filters on exactly that date, fraction and all.
            driver.get(base + "/?entity=Employee&facet=startDate&predicate=" + urllib.request.quote("name == 'Laura Lopez'"))
            run.wait(lambda d: shown_facets() == {"2004-07-18T18:10:00.500Z": 1}, message="the date's facet is not its ISO 8601 text")
            driver.find_element(By.CSS_SELECTOR, '[data-testid="facet-value"]').click()
            run.wait(lambda d: "startDate == CAST(" in run.testid("predicate-input").get_attribute("value"), message="no date term")
            run.text_starts("result-count", "1 ")
        run.check("facets: counts as sift count's, one click filters", facets)

        def sort_by_click():
            driver.get(base + "/?entity=Employee")
            run.visible("results-table")
            run.click("column-age")
            run.wait(lambda d: "sort=age%3Aasc" in d.current_url or "sort=age:asc" in d.current_url, message="no sort in the URL")
            run.wait(lambda d: "▲" in run.testid("column-age").text)
            column = [h.get_attribute("data-testid") for h in driver.find_elements(By.CSS_SELECTOR, '[data-testid="results-table"] thead th')].index("column-age")
            ages = [int(r.find_elements(By.TAG_NAME, "td")[column].text)
                    for r in driver.find_elements(By.CSS_SELECTOR, '[data-testid="results-table"] tbody tr')]
            assert ages == sorted(ages) and len(ages) == 50, ages
            run.click("column-age")
            run.wait(lambda d: "▼" in run.testid("column-age").text)
        run.check("a column sorts when clicked", sort_by_click)

        def values_by_type():
            driver.get(base + "/?entity=Employee&predicate=" + urllib.request.quote("name == ''"))
            table = run.visible("results-table")
            run.wait(lambda d: table.find_elements(By.CSS_SELECTOR, "tbody span.empty"))
            assert table.find_element(By.CSS_SELECTOR, "tbody span.empty").text == '""'
            driver.get(base + "/?entity=Employee&predicate=" + urllib.request.quote("rating == nil"))
            table = run.visible("results-table")
            run.wait(lambda d: table.find_elements(By.CSS_SELECTOR, "tbody span.nil"))
            assert all(cell.text == "nil" for cell in table.find_elements(By.CSS_SELECTOR, "tbody span.nil"))
            dates = table.find_elements(By.CSS_SELECTOR, "tbody time.date")
            assert dates, "dates are not shown as dates"
            # As the API sends them: ISO 8601 text, fractional seconds when there are some.
            iso = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3,})?Z$")
            assert all(iso.match(date.text) and date.text == date.get_attribute("datetime") for date in dates), [d.text for d in dates]
            assert any("." in date.text for date in dates), [d.text for d in dates]
        run.check("values by type: empty apart from nil, dates as dates", values_by_type)

        def follow_relationships():
            driver.get(base + "/?entity=Department")
            run.visible("results-table")
            link = run.wait(EC.element_to_be_clickable((By.CSS_SELECTOR, '[data-testid^="to-many-employees-"]')))
            count = int(link.text.split()[0])
            owner = link.get_attribute("data-testid").rsplit("-", 1)[1]
            link.click()
            run.text_starts("result-count", f"{count} ")
            run.testid("scope")
            to_one = run.wait(EC.element_to_be_clickable((By.CSS_SELECTOR, '[data-testid^="to-one-department-"]')))
            to_one.click()
            view = run.visible("object-view")
            run.wait(lambda d: f"Department {owner}" in view.text)
        run.check("follow a to-many, then a to-one", follow_relationships)

        def explain():
            driver.get(base + "/?entity=Employee&predicate=" + urllib.request.quote("age > 40 AND department.name == 'Engineering'"))
            run.visible("results-table")
            run.click("explain-button")
            sql = run.visible("explain-sql")
            assert "SELECT" in sql.text and "ZEMPLOYEE" in sql.text, sql.text
            assert "?1 = 40" in run.testid("explain-bindings").text
            assert run.testid("explain-plan").text.strip()
        run.check("explain shows the SQL, bindings and plan", explain)

        def explain_follows_the_predicate():
            # Issue 49: the panel kept the SQL of `age > 40` under another predicate.
            driver.get(base + "/?entity=Employee&predicate=" + urllib.request.quote("age > 40"))
            run.visible("results-table")
            run.click("explain-button")
            run.wait(lambda d: "age > 40" in run.testid("explain-predicate").text)
            before = run.visible("explain-sql").text
            field = run.visible("predicate-input")
            field.send_keys(Keys.CONTROL, "a")
            field.send_keys("name BEGINSWITH '<script>'")
            run.wait(lambda d: "BEGINSWITH" in run.testid("explain-predicate").text, message="the panel kept the old predicate")
            after = run.visible("explain-sql").text
            assert after != before and "ZNAME" in after, after
            assert "40" not in run.testid("explain-bindings").text, run.testid("explain-bindings").text
            assert driver.title != "owned"
            run.click("explain-close")
            run.wait(lambda d: not d.find_elements(By.CSS_SELECTOR, '[data-testid="explain"]'))
            field.send_keys(Keys.CONTROL, "a")
            field.send_keys("age > 50")
            run.text_starts("result-count", f"{sift_count(sift, company, 'Employee', 'age > 50')} ")
            assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="explain"]'), "a closed panel came back"
        run.check("explain follows the predicate, and stays closed once closed", explain_follows_the_predicate)

        def diagram_labels_clear_of_boxes():
            # Issue 49: `employees/department 1–*` was drawn across `age`.
            driver.get(base + "/?view=diagram")
            run.visible("diagram")
            crossings = driver.execute_script("""
                const boxes = [...document.querySelectorAll('svg.diagram .entity rect')].map((r) => r.getBBox());
                const labels = [...document.querySelectorAll('svg.diagram .link-label')];
                const hit = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
                const found = [];
                labels.forEach((label, i) => {
                  const box = label.getBBox();
                  if (boxes.some((b) => hit(box, b))) found.push('box: ' + label.textContent);
                  labels.slice(i + 1).forEach((other) => { if (hit(box, other.getBBox())) found.push(label.textContent + ' / ' + other.textContent); });
                });
                return [labels.length, found];
            """)
            assert crossings[0] > 0, "no link labels"
            assert not crossings[1], crossings[1]
        run.check("the diagram's link labels cross no box and no other label", diagram_labels_clear_of_boxes)

        def group():
            driver.get(base + "/?entity=Employee")
            run.visible("results-table")
            run.click("group-button")
            field = run.visible("group-by-input")
            field.send_keys("department.name")
            Select(run.testid("aggregate-function")).select_by_value("average")
            Select(run.testid("aggregate-attribute")).select_by_value("salary")
            run.click("group-run")
            chart = run.visible("chart")
            bars = chart.find_elements(By.CSS_SELECTOR, '[data-testid="chart-bar"]')
            status, answer = company_server.post("/v1/fetch", {"entity": "Employee", "result": "dictionaries", "groupBy": ["department.name"],
                                                               "select": [{"name": "g", "expression": "department.name"}]})
            assert status == 200 and len(bars) == len(answer["dictionaries"]), (len(bars), answer)
            assert "group=department.name" in driver.current_url
        run.check("group by a key path: a table and a bar chart", group)

        def hostile():
            driver.get(base + f"/?entity=Tag&object={hostile_key}")
            run.visible("object-view")
            run.wait(lambda d: run.testid("edit-name").get_attribute("value") == HOSTILE)
            driver.get(base + "/?entity=Tag&predicate=" + urllib.request.quote("name BEGINSWITH '<script>'"))
            run.text_starts("result-count", "1 ")
            table = run.visible("results-table")
            assert HOSTILE in table.text
            assert not table.find_elements(By.TAG_NAME, "img") and not table.find_elements(By.TAG_NAME, "script")
            assert driver.title != "owned", driver.title
        run.check("a hostile string is shown as text", hostile)

        def edit_and_conflict():
            original = company_server.post("/v1/fetch", {"entity": "Employee", "sort": [{"keyPath": "name"}], "limit": 1})[1]["objects"][0]
            key = original["key"]
            driver.get(base + f"/?entity=Employee&object={key}")
            run.visible("object-view")
            field = run.testid("edit-nickname")
            run.driver.find_element(By.CSS_SELECTOR, '[data-testid="nil-nickname"]').is_selected() and run.click("nil-nickname")
            field.clear()
            field.send_keys("Edited in the page")
            run.click("save-object")
            run.text_starts("save-message", "Saved")
            time.sleep(1.5)  # the change feed brings the page's own save back: it is not another client's
            assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="object-changed"]'), "the page's own save was taken for another's"
            status, answer = company_server.post("/v1/objects", {"entity": "Employee", "keys": [key]})
            row = answer["objects"][0]
            assert row["values"].get("nickname") == "Edited in the page", row
            # The values the page did not touch went back as they were read: dates and whole doubles exactly.
            untouched = {name: value for name, value in original["values"].items() if name != "nickname"}
            assert {name: value for name, value in row["values"].items() if name != "nickname"} == untouched, (original, row)
            # Another client saves the same object; the page still holds the version it read.
            field = run.testid("edit-nickname")
            field.clear()
            field.send_keys("The page's value")
            values = dict(row["values"], nickname="Another client's value")
            status, answer = company_server.post("/v1/save", {"updates": [{"entity": "Employee", "key": key, "expectedVersion": row["version"],
                                                                            "values": values, "toOne": {k: {"key": v} for k, v in row["toOne"].items()}}]})
            assert status == 200, answer
            run.click("save-object")
            conflict = run.visible("conflict")
            assert "The page's value" in conflict.text and "Another client's value" in conflict.text, conflict.text
            run.shot("conflict")
            run.click("policy-objectTrump")
            run.text_starts("save-message", "Saved")
            status, answer = company_server.post("/v1/objects", {"entity": "Employee", "keys": [key]})
            assert answer["objects"][0]["values"].get("nickname") == "The page's value", answer
        run.check("an edit is saved, and a conflict is shown", edit_and_conflict)

        def live():
            driver.get(base + "/?entity=Tag")
            before = sift_count(sift, company, "Tag", "TRUEPREDICATE")
            run.text_starts("result-count", f"{before} ")
            status, answer = company_server.post("/v1/save", {"inserts": [{"temporaryID": -1, "entity": "Tag", "values": {"name": "from another client"}}]})
            assert status == 200, answer
            key = answer["keys"][0]["key"]
            run.text_starts("result-count", f"{before + 1} ", timeout=20)
            run.text_starts("count-Tag", str(before + 1), timeout=20)
            driver.get(base + f"/?entity=Tag&object={key}")
            run.wait(lambda d: run.testid("edit-name").get_attribute("value") == "from another client")
            time.sleep(0.5)  # the page is following the feed again
            row = company_server.post("/v1/objects", {"entity": "Tag", "keys": [key]})[1]["objects"][0]
            status, answer = company_server.post("/v1/save", {"deletes": [{"entity": "Tag", "key": key, "expectedVersion": row["version"]}]})
            assert status == 200, answer
            run.visible("object-changed")
        run.check("other clients' saves reach the page", live)

        def cross_site_write_refused():
            status, _ = company_server.post("/v1/fetch", {"entity": "Tag", "result": "count"})
            assert status == 200
            request = urllib.request.Request(base + "/v1/save", method="POST", data=b'{"deletes":[{"entity":"Tag","key":1}]}',
                                             headers={"Content-Type": "application/json", "Origin": "http://evil.example"})
            try:
                urllib.request.urlopen(request, timeout=10)
                raise AssertionError("a cross-site write was taken")
            except urllib.error.HTTPError as error:
                assert error.code == 403, error.code
            # From the page's own origin but without its token: refused too.
            request = urllib.request.Request(base + "/v1/save", method="POST", data=b'{"deletes":[{"entity":"Tag","key":1}]}',
                                             headers={"Content-Type": "application/json", "Origin": base, "Sec-Fetch-Site": "same-origin"})
            try:
                urllib.request.urlopen(request, timeout=10)
                raise AssertionError("a browser's write without the page's token was taken")
            except urllib.error.HTTPError as error:
                assert error.code == 403, error.code
            errors = [entry for entry in run.logs() if "Content Security Policy" in entry["message"]]
            assert not errors, errors
        run.check("writes from another site are refused; no CSP violation", cross_site_write_refused)

        def export():
            predicate = "budget > 100000"
            expected = sift_count(sift, company, "Department", predicate)
            driver.get(base + "/?entity=Department&predicate=" + urllib.request.quote(predicate))
            run.text_starts("result-count", f"{expected} ")
            run.click("export-csv")
            csv_path = os.path.join(downloads, "Department.csv")
            run.wait(lambda d: os.path.exists(csv_path) and os.path.getsize(csv_path) > 0, message="no CSV downloaded")
            lines = open(csv_path, encoding="utf-8", newline="").read().strip().split("\r\n")
            assert lines[0].startswith("entity,id,name,budget") and len(lines) == expected + 1, lines
            run.click("export-jsonl")
            jsonl_path = os.path.join(downloads, "Department.jsonl")
            run.wait(lambda d: os.path.exists(jsonl_path) and os.path.getsize(jsonl_path) > 0, message="no JSON lines downloaded")
            rows = [json.loads(line) for line in open(jsonl_path, encoding="utf-8").read().splitlines()]
            assert len(rows) == expected and all(row["entity"] == "Department" and row["budget"] > 100000 for row in rows), rows
        run.check("export the view as CSV and JSON lines", export)

        def insert_and_delete():
            before = sift_count(sift, company, "Tag", "TRUEPREDICATE")
            driver.get(base + "/?entity=Tag")
            run.click("insert-button")
            run.visible("new-object")
            run.testid("edit-name").send_keys("made in the page")
            run.click("insert-save")
            view = run.visible("object-view")
            run.wait(lambda d: run.testid("edit-name").get_attribute("value") == "made in the page")
            assert sift_count(sift, company, "Tag", "name == 'made in the page'") == 1
            run.click("delete-object")
            run.click("delete-object")  # the second click confirms
            run.visible("results-table")
            run.wait(lambda d: sift_count(sift, company, "Tag", "TRUEPREDICATE") == before, message="the tag was not deleted")
            del view
        run.check("insert an object, then delete it", insert_and_delete)

        if core_data_server:
            cd = core_data_server.url
            store = os.path.join(scratch, "SampleModel2_V2.sqlite")

            def core_data():
                driver.get(cd + "/")
                entities = run.testid("entity-list")
                book = entities.find_element(By.CSS_SELECTOR, '[data-testid="entity-Book"]')
                book.find_element(By.CSS_SELECTOR, '[data-testid="entity-GraphicNovel"]')  # a subentity under its parent
                run.text_starts("count-Book", str(sift_count(sift, store, "Book", "TRUEPREDICATE")))
                run.click("entity-Page", " > a")
                field = run.testid("predicate-input")
                field.send_keys("number > 50")
                run.text_starts("result-count", str(sift_count(sift, store, "Page", "number > 50")) + " ")
                table = run.visible("results-table")
                binary = table.find_element(By.CSS_SELECTOR, "tbody span.binary")
                assert " bytes" in binary.text and binary.find_element(By.CSS_SELECTOR, "a.download"), binary.text
                assert run.testid("mode").text == "read-only"
            run.check("a store Core Data wrote: entities, subentities, a predicate", core_data)

            def core_data_history():
                driver.get(cd + "/?view=history")
                run.visible("history-table")
                rows = driver.find_elements(By.CSS_SELECTOR, '[data-testid="history-table"] tbody tr')
                assert rows, "no transactions"
            run.check("a Core Data store's history", core_data_history)

            def core_data_diagram():
                driver.get(cd + "/?view=diagram")
                diagram = run.visible("diagram")
                diagram.find_element(By.CSS_SELECTOR, '[data-testid="diagram-Book"]')
            run.check("a Core Data store's model as a diagram", core_data_diagram)

        if postgres_server:
            def postgres():
                predicate = "age > 40 AND name CONTAINS[cd] 'e'"
                driver.get(postgres_server.url + "/?entity=Employee&sort=name:desc&predicate=" + urllib.request.quote(predicate))
                expected = sift_count(sift, (postgres_url, schema), "Employee", predicate)
                run.text_starts("result-count", f"{expected} ")
                run.click("explain-button")
                assert "Scan" in run.visible("explain-plan").text, run.testid("explain-plan").text
                memory = run.testid("explain-memory").text
                assert "CONTAINS[cd]" in memory and "because" in memory, memory
            run.check("a PostgreSQL store: a predicate, and what runs in memory", postgres)
    finally:
        severe = run.logs()
        driver.quit()
        for server in servers:
            server.stop()
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"\n{run.passed} passed, {len(run.failures)} failed; screenshots in {artifacts}")
    if severe:
        print("browser console errors:", *[entry["message"] for entry in severe], sep="\n  ")
    if run.failures:
        print("failed:", ", ".join(run.failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
