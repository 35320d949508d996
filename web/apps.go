package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/xxljob"
)

// An app's page and the apps' forms. Every change is an operation of the apps API (PutApp,
// DeleteApp, the credential operations), which refuses it to whoever is not an admin: the
// forms are shown to admins only, and a request from anyone else is refused by the operation
// all the same.

// The inputs of the app form, by the API field each shows the errors of.
var appFields = []string{"name", "title", "address_mode", "addresses", "protocol", "protocol_version", "xxl_access_token"}

var (
	addressModeOptions = [][2]string{{"auto", "auto (those registered)"}, {"manual", "manual (the addresses)"}}
	protocolOptions    = [][2]string{{"sundial", "Sundial executors"}, {"xxl-job", "XXL-JOB executors"}}
	generationOptions  = [][2]string{{"", "–"}, {string(xxljob.Gen2), string(xxljob.Gen2)},
		{string(xxljob.Gen33), string(xxljob.Gen33)}, {string(xxljob.Gen35), string(xxljob.Gen35)}}
)

type appView struct {
	Now api.Time
	App api.App
	// Instances are the app's executors online.
	Instances []instanceInfo
	// Credential is the app's executor credential, nil when it has none (admins only).
	Credential *api.AppCredential
	// Issued is a credential just issued or rotated: its secret is shown this once.
	Issued *api.AppCredential
	Form   Form
	// Options of the form's selects.
	Modes, Protocols, Generations [][2]string
}

// appForm is the form of app a's settings (an empty one for a new app).
func appForm(a *api.App) Form {
	v := url.Values{"address_mode": {"auto"}, "protocol": {"sundial"}}
	if a != nil {
		v = url.Values{"name": {a.Name}, "title": {a.Title}, "address_mode": {a.AddressMode},
			"addresses": {strings.Join(a.Addresses, "\n")}, "protocol": {a.Protocol}, "protocol_version": {a.ProtocolVersion}}
	}
	return newForm(v, appFields)
}

// appRequest reads the app form into the API's request: addresses one per line (or
// separated by commas).
func appRequest(form url.Values) api.AppRequest {
	addrs := strings.FieldsFunc(form.Get("addresses"), func(r rune) bool { return r == '\n' || r == '\r' || r == ',' || r == ' ' })
	if addrs == nil {
		addrs = []string{}
	}
	req := api.AppRequest{Title: form.Get("title"), AddressMode: form.Get("address_mode"), Addresses: addrs,
		Protocol: form.Get("protocol"), ProtocolVersion: form.Get("protocol_version"), XXLAccessToken: form.Get("xxl_access_token")}
	if req.Protocol == "sundial" {
		req.ProtocolVersion = "" // the generation select is left as it was when the protocol changed
	}
	return req
}

// appFieldErrors files an error of the app form at its input: an address's index goes to the
// addresses' textarea.
func appFieldErrors(err error, errs map[string]string) bool {
	if !showAtField(err, errs) {
		return false
	}
	for k, msg := range errs {
		if strings.HasPrefix(k, "addresses[") {
			delete(errs, k)
			errs["addresses"] = k + ": " + msg
		}
	}
	return true
}

// appCreate makes an app; the API's PUT creates or replaces, and creating must not replace an
// app silently.
func (c *Console) appCreate(w http.ResponseWriter, r *http.Request) error {
	form := newForm(r.PostForm, appFields)
	form.Values.Del("xxl_access_token")
	name := strings.TrimSpace(r.PostFormValue("name"))
	_, err := c.ops().GetApp.Execute(r.Context(), &server.AppRef{Name: name})
	switch {
	case err == nil:
		form.Errors["name"] = "an app of this name exists already: change it on its page"
		return c.showApps(w, r, http.StatusOK, form)
	case !errors.Is(err, store.ErrNotFound):
		if appFieldErrors(err, form.Errors) {
			return c.showApps(w, r, http.StatusOK, form)
		}
		return err
	}
	_, err = c.ops().PutApp.Execute(r.Context(), &server.AppPut{Name: name, AppRequest: appRequest(r.PostForm)})
	if appFieldErrors(err, form.Errors) {
		return c.showApps(w, r, http.StatusOK, form)
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/apps/"+url.PathEscape(name)+"?done=app-created", http.StatusSeeOther)
	return nil
}

func (c *Console) appPage(w http.ResponseWriter, r *http.Request) error {
	return c.showApp(w, r, http.StatusOK, nil, nil, flashText(r.URL.Query().Get("done")))
}

// showApp shows app {name}: its settings, executors online and, for an admin, the forms that
// change it and its executor credential.
func (c *Console) showApp(w http.ResponseWriter, r *http.Request, status int, form *Form, issued *api.AppCredential, flash string) error {
	name := r.PathValue("name")
	a, err := c.ops().GetApp.Execute(r.Context(), &server.AppRef{Name: name})
	if err != nil {
		return err
	}
	av := appView{Now: api.TimeOf(c.clock.Now()), App: *a, Issued: issued, Modes: addressModeOptions,
		Protocols: protocolOptions, Generations: generationOptions}
	if av.Instances, err = c.executors(r, name); err != nil {
		return err
	}
	if form != nil {
		av.Form = *form
	} else {
		av.Form = appForm(a)
	}
	if u := userFrom(r.Context()); u != nil && u.Admin() {
		creds, err := c.ops().ListCredentials.Execute(r.Context(), &server.AppRef{Name: name})
		if err != nil {
			return err
		}
		if len(*creds) > 0 {
			av.Credential = &(*creds)[0]
		}
	}
	return c.render(w, r, status, "app", &view{Title: "App " + a.Name, Nav: "apps", Data: av, Flash: flash})
}

// appUpdate changes an app's settings; an xxl-job app's access token left empty is kept.
func (c *Console) appUpdate(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	form := newForm(r.PostForm, appFields)
	form.Values.Del("xxl_access_token")
	_, err := c.ops().PutApp.Execute(r.Context(), &server.AppPut{Name: name, AppRequest: appRequest(r.PostForm)})
	if appFieldErrors(err, form.Errors) {
		return c.showApp(w, r, http.StatusOK, &form, nil, "")
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/apps/"+url.PathEscape(name)+"?done=app-saved", http.StatusSeeOther)
	return nil
}

// appDelete deletes an app and, with it, its executor credential; its jobs stay.
func (c *Console) appDelete(w http.ResponseWriter, r *http.Request) error {
	if _, err := c.ops().DeleteApp.Execute(r.Context(), &server.AppRef{Name: r.PathValue("name")}); err != nil {
		return err
	}
	http.Redirect(w, r, "/apps?done=app-deleted", http.StatusSeeOther)
	return nil
}

// appCredential issues, rotates or revokes the app's executor credential. A secret issued is
// shown on the answer to this POST only: the page is not cached, and a reload shows the
// credential without it.
func (c *Console) appCredential(w http.ResponseWriter, r *http.Request) error {
	ref := &server.AppRef{Name: r.PathValue("name")}
	var (
		cred *api.AppCredential
		err  error
	)
	switch r.PathValue("action") {
	case "issue":
		cred, err = c.ops().CreateCredential.Execute(r.Context(), ref)
	case "rotate":
		cred, err = c.ops().RotateCredential.Execute(r.Context(), ref)
	case "revoke":
		if _, err := c.ops().RevokeCredential.Execute(r.Context(), ref); err != nil {
			return err
		}
		http.Redirect(w, r, "/apps/"+url.PathEscape(ref.Name)+"?done=credential-revoked", http.StatusSeeOther)
		return nil
	default:
		return errNotFound("no credential action " + r.PathValue("action"))
	}
	if err != nil {
		return err
	}
	return c.showApp(w, r, http.StatusOK, nil, cred, "")
}
