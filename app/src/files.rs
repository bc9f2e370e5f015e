//! Files in and out of the browser: save text as a download, read the file
//! a user picked.

use wasm_bindgen::JsCast;

/// Offers `text` as a download named `name` (a JSON file).
pub fn download(name: &str, text: &str) -> Result<(), String> {
    let fail = |e: wasm_bindgen::JsValue| format!("cannot save the file: {e:?}");
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("application/json");
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options).map_err(fail)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(fail)?;
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or("no document")?;
    let a: web_sys::HtmlAnchorElement = document
        .create_element("a")
        .map_err(fail)?
        .dyn_into()
        .map_err(|_| "not an anchor".to_string())?;
    a.set_href(&url);
    a.set_download(name);
    a.click();
    web_sys::Url::revoke_object_url(&url).map_err(fail)
}

/// The text of the first file picked in `input`, with its name; None when
/// none was picked.
pub async fn read_picked(
    input: &web_sys::HtmlInputElement,
) -> Result<Option<(String, String)>, String> {
    let Some(file) = input.files().and_then(|f| f.get(0)) else {
        return Ok(None);
    };
    let text = wasm_bindgen_futures::JsFuture::from(file.text())
        .await
        .map_err(|e| format!("cannot read {}: {e:?}", file.name()))?;
    Ok(Some((file.name(), text.as_string().unwrap_or_default())))
}
